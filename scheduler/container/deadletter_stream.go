package container

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/internal/names"
	"github.com/ardea-dev/ardea/scheduler/settings"
)

// A confined (tenant's) topology under the daemon writes its bolts' dead
// letters to the tenant's dead-letter stream (names.DeadLetterStream, in
// the tenant's NATS account, made by the daemon with
// DeadLetterStreamConfig): one message per tuple on
// names.DeadLetterSubject, its BoltDeadLetter record. The stream is in the
// tenant's account, so it counts against the tenant's JetStream disk quota
// (jetstream_disk), and its own bound (MaxBytes, DeadLetterStreamMaxBytes)
// is reserved out of that quota: past it a dead letter is refused (not an
// older one dropped), and the refusal names the bound.

// DeadLetterStreamMaxBytes is the bound of a tenant's dead-letter stream:
// settings.MaxDeadLetterBytes (a bolt's dead-letter file's bound), and at
// most an eighth of the tenant's JetStream disk quota disk (> 0), so that
// the rest stays for its checkpoints, state and streams.
func DeadLetterStreamMaxBytes(disk int64) int64 {
	size := int64(settings.MaxDeadLetterBytes)
	if disk > 0 {
		size = max(min(size, disk/8), 1)
	}
	return size
}

// DeadLetterStreamConfig is tenant's dead-letter stream, bounded by
// maxBytes: a file stream capturing every topology's dead letters of the
// tenant (names.DeadLetterSubjects), one message per subject (a tuple's
// dead letter is written once), new messages refused when full.
func DeadLetterStreamConfig(tenant string, maxBytes int64) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:              names.DeadLetterStream,
		Description:       "Ardea: the bolts' dead letters of tenant " + tenant + "'s topologies (" + names.DeadLetterSubject(tenant, "<topology>", "<component>", "<hash>") + ")",
		Subjects:          []string{names.DeadLetterSubjects(tenant)},
		Storage:           jetstream.FileStorage,
		Retention:         jetstream.LimitsPolicy,
		Discard:           jetstream.DiscardNew,
		MaxBytes:          maxBytes,
		MaxMsgsPerSubject: 1,
		Replicas:          1,
	}
}

// deadLetterTimeout bounds publishing one dead letter.
const deadLetterTimeout = 10 * time.Second

// PublishDeadLetter publishes a dead letter, rec (a BoltDeadLetter
// record), of the tuple hash (16 hex digits) to place's stream on nc,
// unless the stream holds one of that hash already (written false): a
// rollback to a checkpoint taken before the tuple was dead-lettered
// replays it, and it must be written once. A refusal (the stream's bound,
// the tenant's quota) names the stream's bound.
func PublishDeadLetter(ctx context.Context, nc *nats.Conn, place settings.DeadLetterPlace, hash string, rec []byte) (written bool, err error) {
	if nc == nil {
		return false, fmt.Errorf("dead-letter stream %s: no NATS connection", place.Stream)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(ctx, deadLetterTimeout)
	defer cancel()
	_, err = js.PublishMsg(ctx, &nats.Msg{Subject: place.Subject + "." + hash, Data: rec},
		jetstream.WithExpectStream(place.Stream), jetstream.WithExpectLastSequencePerSubject(0))
	var apiErr *jetstream.APIError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant):
		return false, nil
	}
	bound := "its bound unknown"
	if s, ierr := js.Stream(ctx, place.Stream); ierr == nil {
		in := s.CachedInfo()
		bound = fmt.Sprintf("its bound max_bytes %d (reserved out of the tenant's quota jetstream_disk), holding %d bytes", in.Config.MaxBytes, in.State.Bytes)
	}
	return false, fmt.Errorf("dead-letter stream %s (%s): %w", place.Stream, bound, err)
}
