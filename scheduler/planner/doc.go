// Package planner turns a topology into plans: the logical plan (its
// components and streams) is packed (scheduler/packing) into containers
// and built into the physical plan every container runs (BuildPlan,
// PackPlan); RescalePlan and LiveRescalePlan compute re-plans. Prepare is
// what a topology passes before it runs.
//
// Pure functions: no goroutines, no locks.
package planner
