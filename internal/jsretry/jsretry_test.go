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
