// Package planner is Ardea's own (not a public API): it turns a topology
// into plans: the logical plan (its components and streams) is packed
// (scheduler/packing) into containers and built into the physical plan every
// container runs (BuildPlan, PackPlan); RescalePlan and LiveRescalePlan
// compute re-plans. What a topology passes before it runs is
// connectors.PrepareTopology: it checks the topology against the built-in
// connectors, whose clients (Kafka, Pulsar) the planner does not link.
//
// Pure functions: no goroutines, no locks.
package planner
