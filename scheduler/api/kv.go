package api

import (
	"time"
)

// Bounds of the KV routes.
const (
	// MaxKVKeys is the most keys one key listing returns.
	MaxKVKeys = 10000
	// MaxKVHistory is the most revisions a bucket keeps per key
	// (JetStream's limit, jetstream.KeyValueMaxHistory).
	MaxKVHistory = 64
)

// KVInfo is a tenant KV bucket as the API shows it.
type KVInfo struct {
	Name string `json:"name"`
	// Values counts the revisions stored (each key's, up to History).
	Values   uint64    `json:"values"`
	Bytes    uint64    `json:"bytes"`
	MaxBytes int64     `json:"max_bytes"`
	History  int64     `json:"history"`
	Created  time.Time `json:"created"`
}

// CreateKVRequest is POST /api/v1/kv.
type CreateKVRequest struct {
	Name string `json:"name"`
	// History is how many revisions of each key the bucket keeps (1 to
	// MaxKVHistory; 0: 1).
	History int `json:"history,omitempty"`
	// MaxBytes bounds the bucket (a put past it is refused); 0:
	// connectors.TenantKVDefaultMaxBytes, at most the tenant's JetStream
	// disk quota.
	MaxBytes int64 `json:"max_bytes,omitempty"`
}

// KVPutRequest is PUT /api/v1/kv/{bucket}/value?key=K.
type KVPutRequest struct {
	Value string `json:"value"`
}

// KVEntry is a key's value (GET /api/v1/kv/{bucket}/value?key=K), or the
// answer to a put (without the value).
type KVEntry struct {
	Bucket   string    `json:"bucket"`
	Key      string    `json:"key"`
	Value    string    `json:"value,omitempty"`
	Revision uint64    `json:"revision"`
	Created  time.Time `json:"created,omitzero"`
}

// KVKeys is GET /api/v1/kv/{bucket}/keys: the bucket's keys (those that
// match the filter), sorted, at most the asked limit and 4 MiB of keys;
// Truncated says there were more.
type KVKeys struct {
	Bucket    string   `json:"bucket"`
	Keys      []string `json:"keys"`
	Truncated bool     `json:"truncated,omitempty"`
}
