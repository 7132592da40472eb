package jsretry

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestUnavailable(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{context.DeadlineExceeded, true},
		{fmt.Errorf("wrapped: %w", nats.ErrNoResponders), true},
		{nats.ErrJetStreamNotEnabled, true},
		{jetstream.ErrJetStreamNotEnabled, true},
		{&jetstream.APIError{Code: 503, ErrorCode: 10008}, true},
		{&jetstream.APIError{Code: 500, ErrorCode: 10005}, true},
		{&jetstream.APIError{Code: 400, ErrorCode: 10005, Description: "no suitable peers for placement, peer offline"}, true},
		// No peer has the stream's MaxBytes free: asking again is futile.
		{&jetstream.APIError{Code: 400, ErrorCode: 10005, Description: "no suitable peers for placement, insufficient storage"}, false},
		{fmt.Errorf("create: %w", &jetstream.APIError{Code: 400, ErrorCode: 10005, Description: "no suitable peers for placement, peer offline, insufficient storage"}), true},
		{&jetstream.APIError{Code: 400, ErrorCode: 10058}, false}, // stream name in use
		{jetstream.ErrKeyNotFound, false},
		{context.Canceled, false},
		{errors.New("bad config"), false},
	} {
		if got := Unavailable(c.err); got != c.want {
			t.Errorf("Unavailable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestRetryUnavailable(t *testing.T) {
	calls := 0
	v, err := RetryUnavailable(t.Context(), time.Second, func(ctx context.Context) (int, error) {
		calls++
		if _, ok := ctx.Deadline(); !ok {
			t.Error("a try without its deadline")
		}
		if calls < 3 {
			return 0, nats.ErrNoResponders
		}
		return 7, nil
	})
	if v != 7 || err != nil || calls != 3 {
		t.Fatalf("got %d %v after %d calls, want 7 after 3", v, err, calls)
	}
	calls = 0
	_, err = RetryUnavailable(t.Context(), time.Second, func(context.Context) (int, error) {
		calls++
		return 0, errors.New("bad config")
	})
	if err == nil || calls != 1 {
		t.Fatalf("an error that is not unavailable: %v after %d calls, want it at once", err, calls)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err = RetryUnavailable(ctx, time.Second, func(context.Context) (int, error) { return 0, nats.ErrNoResponders })
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("a cluster that never answers: %v, want the context's end and the last error", err)
	}
	// One replica: Create tries once.
	calls = 0
	_, err = Create(t.Context(), 1, func(context.Context) (int, error) { calls++; return 0, nats.ErrNoResponders })
	if err == nil || calls != 1 {
		t.Fatalf("Create with one replica: %v after %d calls, want one try", err, calls)
	}
}

// TestCurrent: Ready waits for every replica of a stream just created
// to catch up, but not for one on a lost node (not heard from for
// lostReplica, or offline), and on a stream in use (it holds messages)
// for a quorum only.
func TestCurrent(t *testing.T) {
	peer := func(current, offline bool, active time.Duration) *jetstream.PeerInfo {
		return &jetstream.PeerInfo{Name: "n", Current: current, Offline: offline, Active: active}
	}
	info := func(replicas int, leader string, peers ...*jetstream.PeerInfo) *jetstream.StreamInfo {
		return &jetstream.StreamInfo{Config: jetstream.StreamConfig{Replicas: replicas},
			Cluster: &jetstream.ClusterInfo{Leader: leader, Replicas: peers}}
	}
	inUse := func(i *jetstream.StreamInfo) *jetstream.StreamInfo { i.State.LastSeq = 89; return i }
	up := peer(true, false, 200*time.Millisecond)
	behind := peer(false, false, 200*time.Millisecond)
	unseen := peer(false, false, 0) // a replica just made, not heard from yet
	lost := peer(false, false, 11*time.Second)
	silent := peer(true, false, 4*time.Second) // still reported current
	offline := peer(true, true, 0)
	for _, c := range []struct {
		name string
		info *jetstream.StreamInfo
		want bool
	}{
		{"all current", info(3, "n1", up, up), true},
		{"no leader", info(3, "", up, up), false},
		{"no cluster info", &jetstream.StreamInfo{Config: jetstream.StreamConfig{Replicas: 3}}, false},
		{"a replica missing", info(3, "n1", up), false},
		{"a replica behind", info(3, "n1", up, behind), false},
		{"a replica not heard from yet", info(3, "n1", up, unseen), false},
		{"a lost node's replica", info(3, "n1", up, lost), true},
		{"a silent replica still reported current", info(3, "n1", up, silent), true},
		{"an offline replica", info(3, "n1", up, offline), true},
		{"a lost replica and one behind", info(3, "n1", behind, lost), false},
		{"two lost of three", info(3, "n1", lost, lost), false},
		{"two lost of five", info(5, "n1", up, up, lost, lost), true},
		{"three lost of five", info(5, "n1", up, lost, lost, lost), false},
		// A leader elected after a node's loss has never heard from it.
		{"in use: a replica the leader never heard from", inUse(info(3, "n2", unseen, up)), true},
		{"in use: a replica behind", inUse(info(3, "n1", up, behind)), true},
		{"in use: two of three not current", inUse(info(3, "n2", unseen, behind)), false},
		{"in use: no leader", inUse(info(3, "", up, up)), false},
	} {
		if got := current(c.info); got != c.want {
			t.Errorf("%s: current = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestRetryAccountChanging: a read on a JetStream alone is asked again
// while its account changes (no responder, JetStream off), and only then.
func TestRetryAccountChanging(t *testing.T) {
	blips := []error{nats.ErrNoResponders, jetstream.ErrJetStreamNotEnabled, fmt.Errorf("statemgr: listing topologies: %w", nats.ErrJetStreamNotEnabled)}
	for _, blip := range blips {
		if !AccountChanging(blip) {
			t.Errorf("AccountChanging(%v) = false", blip)
		}
	}
	for _, other := range []error{nil, context.DeadlineExceeded, jetstream.ErrStreamNotFound, errors.New("bad")} {
		if AccountChanging(other) {
			t.Errorf("AccountChanging(%v) = true", other)
		}
	}
	calls := 0
	v, err := RetryAccountChanging(t.Context(), time.Minute, func(context.Context) (int, error) {
		calls++
		if calls <= len(blips) {
			return 0, blips[calls-1]
		}
		return 7, nil
	})
	if v != 7 || err != nil || calls != len(blips)+1 {
		t.Errorf("after %d blips: %d %v in %d calls, want 7 <nil> in %d", len(blips), v, err, calls, len(blips)+1)
	}
	calls = 0
	_, err = RetryAccountChanging(t.Context(), time.Minute, func(context.Context) (int, error) {
		calls++
		return 0, jetstream.ErrKeyNotFound
	})
	if !errors.Is(err, jetstream.ErrKeyNotFound) || calls != 1 {
		t.Errorf("another error: %v in %d calls, want it at once", err, calls)
	}
	// Past its patience the last error is reported.
	calls = 0
	_, err = RetryAccountChanging(t.Context(), 0, func(context.Context) (int, error) {
		calls++
		return 0, nats.ErrNoResponders
	})
	if !errors.Is(err, nats.ErrNoResponders) || calls != 1 {
		t.Errorf("no patience: %v in %d calls", err, calls)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = RetryAccountChanging(ctx, time.Minute, func(context.Context) (int, error) { return 0, nats.ErrNoResponders })
	if !errors.Is(err, nats.ErrNoResponders) {
		t.Errorf("ended ctx: %v", err)
	}
}
