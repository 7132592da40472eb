package api

import (
	"context"
	"net/http"
	"time"
)

// Node is one node of a cluster of daemons (`ardea server`), or the
// daemon alone (`ardea local`), as GET /api/v1/nodes shows it.
type Node struct {
	Name string `json:"name"`
	// API, NATS and Cluster are its addresses: the API's URL, the NATS
	// client URL its containers connect to, and its route URL ("" for a
	// daemon alone).
	API     string `json:"api"`
	NATS    string `json:"nats"`
	Cluster string `json:"cluster,omitempty"`
	// Cores and MemoryBytes are what its machine has.
	Cores       int   `json:"cores"`
	MemoryBytes int64 `json:"memory_bytes"`
	// Topologies it manages (tenant/name) and the containers running on it.
	Topologies []string `json:"topologies"`
	Containers int      `json:"containers"`
	// RequestedMemoryBytes and RequestedCPU are what the containers
	// running on it requested (their packing): a container is placed on
	// a node only with its memory request free.
	RequestedMemoryBytes int64   `json:"requested_memory_bytes,omitempty"`
	RequestedCPU         float64 `json:"requested_cpu,omitempty"`
	// Health is "up" while it reports (every NodeReportEvery), "lost" once
	// it has not reported for NodeLostAfter.
	Health NodeHealth `json:"health"`
	// Started and Seen are when it started and last reported.
	Started time.Time `json:"started"`
	Seen    time.Time `json:"seen"`
}

// NodeHealth is a node's health in Node.
type NodeHealth string

// The node healths.
const (
	NodeUp   NodeHealth = "up"
	NodeLost NodeHealth = "lost"
)

// How often a node reports itself, and when one that stopped is lost.
const (
	NodeReportEvery = 3 * time.Second
	NodeLostAfter   = 15 * time.Second
)

// Nodes lists the cluster's nodes (admin scope).
func (c *Client) Nodes(ctx context.Context) ([]Node, error) {
	var out []Node
	return out, c.do(ctx, http.MethodGet, "/api/v1/nodes", nil, &out)
}
