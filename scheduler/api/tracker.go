package api

import (
	"time"
)

// The tracker's answers (package ui serves them, as documented in
// ui/openapi.yaml) and the exceptions its summaries list.

// TopologyInfo is one topology's information and execution state, the
// tracker's GET /api/v1/topologies/{name}/info (and executionstate).
type TopologyInfo struct {
	Name         string            `json:"name"`
	State        string            `json:"state"`
	Message      string            `json:"message,omitempty"`
	Submitted    time.Time         `json:"submitted,omitzero"`
	SubmittedBy  string            `json:"submitted_by,omitempty"`
	Started      time.Time         `json:"started,omitzero"` // this run of its topology manager
	Containers   int               `json:"containers"`
	Instances    int               `json:"instances"`
	PlanRevision uint64            `json:"plan_revision"`
	Reliability  string            `json:"reliability"`
	Config       map[string]string `json:"config"` // topology-level settings
}

// LogicalPlan is the topology's components and streams (GET
// /api/v1/topologies/{name}/logicalplan).
type LogicalPlan struct {
	Topology   string             `json:"topology"`
	Components []LogicalComponent `json:"components"`
}

// LogicalComponent is one spout or bolt.
type LogicalComponent struct {
	Name        string            `json:"name"`
	Kind        string            `json:"kind"` // spout, bolt
	Module      string            `json:"module"`
	Language    string            `json:"language"` // go, rust, c, assemblyscript, builtin, wasm
	Version     string            `json:"version,omitempty"`
	Parallelism int               `json:"parallelism"`
	Config      map[string]string `json:"config"`
	Outputs     []LogicalStream   `json:"outputs"`
	Inputs      []LogicalInput    `json:"inputs"`
}

// LogicalStream is a declared output stream.
type LogicalStream struct {
	Name   string   `json:"name"`
	Fields []string `json:"fields"`
}

// LogicalInput is a subscription of a component to a stream.
type LogicalInput struct {
	From     string   `json:"from"`
	Stream   string   `json:"stream"`
	Grouping string   `json:"grouping"`
	Fields   []string `json:"fields,omitempty"`
}

// ErrorBody is the body of every error answer of the API.
type ErrorBody struct {
	Status  int    `json:"status"`
	Message string `json:"message"`
	// Error repeats Message (the CLI's older field).
	Error string `json:"error"`
}

// MetricsAnswer is /metrics: per metric, per instance, a counter's
// increase or a gauge's mean over [starttime, endtime].
type MetricsAnswer struct {
	Topology  string                        `json:"topology"`
	Component string                        `json:"component"`
	Interval  int64                         `json:"interval"` // seconds
	StartTime int64                         `json:"starttime"`
	EndTime   int64                         `json:"endtime"`
	Metrics   map[string]map[string]float64 `json:"metrics"`
}

// TimelineAnswer is /metrics/timeline: per metric, per instance, per step
// start (unix seconds) a value.
type TimelineAnswer struct {
	Topology  string                                   `json:"topology"`
	Component string                                   `json:"component"`
	StartTime int64                                    `json:"starttime"`
	EndTime   int64                                    `json:"endtime"`
	Step      int64                                    `json:"step"` // seconds
	Timeline  map[string]map[string]map[string]float64 `json:"timeline"`
}

// Exception is an error a task raised (a trap, a failed call, an error
// it logged), deduplicated within one batch: the metrics batches carry
// them (sinks/metric.Batch), the tracker folds them over instances.
type Exception struct {
	Topology  string    `json:"topology"`
	Component string    `json:"component"`
	Task      int       `json:"task"`
	Container int       `json:"container"`
	Message   string    `json:"message"`
	Count     int64     `json:"count"`
	First     time.Time `json:"first"`
	Last      time.Time `json:"last"`
}
