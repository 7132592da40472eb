package api

import (
	"time"
)

// MaxStreamRead is the most messages one read of a tenant stream
// returns.
const MaxStreamRead = 1000

// StreamInfo is a tenant stream as the API shows it.
type StreamInfo struct {
	Name     string    `json:"name"`
	Messages uint64    `json:"messages"`
	Bytes    uint64    `json:"bytes"`
	MaxBytes int64     `json:"max_bytes"`
	FirstSeq uint64    `json:"first_seq"`
	LastSeq  uint64    `json:"last_seq"`
	Created  time.Time `json:"created"`
}

// CreateStreamRequest is POST /api/v1/streams.
type CreateStreamRequest struct {
	Name string `json:"name"`
	// MaxBytes bounds the stream (the oldest messages are dropped past
	// it); 0: connectors.TenantStreamDefaultMaxBytes, at most the
	// tenant's JetStream disk quota.
	MaxBytes int64 `json:"max_bytes,omitempty"`
}

// PublishRequest is POST /api/v1/streams/{name}/messages.
type PublishRequest struct {
	Messages []string `json:"messages"`
}

// PublishResult answers it.
type PublishResult struct {
	Published int    `json:"published"`
	LastSeq   uint64 `json:"last_seq"`
}

// StreamMessage is one message of GET /api/v1/streams/{name}/messages.
type StreamMessage struct {
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	Data string    `json:"data"`
}

// StreamRead answers it: the messages from the asked sequence on, and the
// sequence to read from next.
type StreamRead struct {
	Stream   string          `json:"stream"`
	Messages []StreamMessage `json:"messages"`
	Next     uint64          `json:"next"`
}
