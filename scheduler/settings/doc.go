// Package settings is Ardea's own (not a public API): it reads what a
// topology's config says about how it runs: the delivery mode and its
// parameters (DeliverySettings), recovery (RecoverySettings), checkpoint
// storage (CheckpointStorageSettings) and the wasm instances' limits
// (InstanceLimits, CheckLimits). Each reader checks its keys and names the
// bad one in its error.
//
// Pure functions: no goroutines, no locks.
package settings
