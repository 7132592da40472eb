package statemgr

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/internal/jsretry"
)

// readYourWrites is a replicated KV bucket whose reads see this Store's
// own writes. The buckets the hosts read by key (topologies, plans) keep
// JetStream's direct gets, which any replica answers (the hosts'
// credentials allow only those, per key: internal/natsauth), and a
// replica that has not applied a write yet answers as if it had not
// happened: a topology just submitted would be "not found" by the
// submit's own next step on another replica. The buckets only the daemon
// reads read from their leader instead (jsretry.LeaderReads).
//
// It remembers the revision of each key it wrote; a read of that key that
// finds nothing or an older revision is asked again, for readWaitLimit at
// most (the replica catches up in milliseconds), and then answers what it
// finds. Writes of other processes are not waited for: they reach this
// one through the TM lock and the plan's watch, which are ordered.
type readYourWrites struct {
	jetstream.KeyValue
	mu   sync.Mutex
	revs map[string]uint64
}

const readWaitLimit = 2 * time.Second

func (k *readYourWrites) wrote(key string, rev uint64, err error) (uint64, error) {
	if err == nil {
		k.mu.Lock()
		if rev > k.revs[key] {
			k.revs[key] = rev
		}
		k.mu.Unlock()
	}
	return rev, err
}

func (k *readYourWrites) Put(ctx context.Context, key string, value []byte) (uint64, error) {
	rev, err := k.KeyValue.Put(ctx, key, value)
	return k.wrote(key, rev, err)
}

func (k *readYourWrites) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	rev, err := k.KeyValue.Create(ctx, key, value, opts...)
	return k.wrote(key, rev, err)
}

func (k *readYourWrites) Update(ctx context.Context, key string, value []byte, last uint64) (uint64, error) {
	rev, err := k.KeyValue.Update(ctx, key, value, last)
	return k.wrote(key, rev, err)
}

func (k *readYourWrites) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	k.mu.Lock()
	want := k.revs[key]
	k.mu.Unlock()
	e, err := k.KeyValue.Get(ctx, key)
	if want == 0 {
		return e, err
	}
	deadline := time.Now().Add(readWaitLimit)
	wait := 5 * time.Millisecond
	for (errors.Is(err, jetstream.ErrKeyNotFound) || err == nil && e.Revision() < want) && time.Now().Before(deadline) {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return e, err
		case <-t.C:
		}
		wait = min(2*wait, 100*time.Millisecond)
		e, err = k.KeyValue.Get(ctx, key)
	}
	return e, err
}

// listTry bounds one try of a read that pages through a bucket with a
// consumer (a listing, a watch's first values) on a replicated store: a
// cluster that elects can leave the consumer's creation unanswered, and
// the read would wait for ever.
const listTry = 10 * time.Second

// bounded runs f on a store alone (replicas 0 or 1) asked again only
// while the tenant's account changes (jsretry.AccountChanging, for up to
// accountPatience), else with each try bounded by listTry and asked again
// while JetStream is unavailable (jsretry), until ctx ends.
func bounded[T any](ctx context.Context, replicas int, f func(context.Context) (T, error)) (T, error) {
	if replicas <= 1 {
		return jsretry.RetryAccountChanging(ctx, accountPatience, f)
	}
	ctx, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	return jsretry.RetryUnavailable(ctx, listTry, f)
}

// patience bounds how long a read or listing is asked again: a cluster
// elects in seconds; one that has not answered by then is reported.
const patience = 30 * time.Second

// accountPatience bounds how long a store alone asks again while its
// account changes: the server applies an account's update in
// milliseconds, so a longer outage is a fault to report.
const accountPatience = 5 * time.Second

// aloneKV is a KV bucket of a store alone whose reads are asked again
// while the tenant's account changes (bounded's reason).
type aloneKV struct{ jetstream.KeyValue }

func (k aloneKV) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	return jsretry.RetryAccountChanging(ctx, accountPatience, func(ctx context.Context) (jetstream.KeyValueEntry, error) {
		return k.KeyValue.Get(ctx, key)
	})
}

// patientKV is a replicated KV bucket whose reads are asked again while
// the cluster does not answer (a lost request, an election): a read
// changes nothing, so a second one is safe, where a write is not (its
// first may have landed).
type patientKV struct{ jetstream.KeyValue }

// readTry bounds one read on a replicated bucket.
const readTry = 2 * time.Second

func (k patientKV) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	ctx, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	return jsretry.RetryUnavailable(ctx, readTry, func(ctx context.Context) (jetstream.KeyValueEntry, error) {
		return k.KeyValue.Get(ctx, key)
	})
}
