package tenancy

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/internal/names"
)

// A confined tenant's bolts' dead letters (settings.MachinePolicy's
// BoltDeadLetter) go, with NATS accounts, to the tenant's dead-letter
// stream (names.DeadLetterStream in its account): they count against its
// quota jetstream_disk, a topology's hosts publish only their own
// topology's subjects, a kill purges the topology's subjects
// (RemoveDeadLetters), and deleting the tenant removes the stream with
// its account (Delete). Without accounts (in process) they go to files
// under deadLetterDir. The daemon makes the stream and reads it (the
// records are its containers').

// streamOpTimeout bounds each JetStream call on a tenant's dead-letter
// stream.
const streamOpTimeout = 10 * time.Second

// purgeDeadLetters removes topology's dead letters from sp's tenant's
// dead-letter stream.
func purgeDeadLetters(ctx context.Context, sp *Space, stream, topology string) error {
	js, err := jetstream.New(sp.nc)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, streamOpTimeout)
	defer cancel()
	s, err := js.Stream(cctx, stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return s.Purge(cctx, jetstream.WithPurgeSubject(names.TopologyDeadLetters(sp.tenant, topology)))
}

// deleteDeadLetterStream deletes sp's tenant's dead-letter stream (the
// tenant is deleted).
func deleteDeadLetterStream(ctx context.Context, sp *Space) error {
	js, err := jetstream.New(sp.nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, streamOpTimeout)
	defer cancel()
	if err := js.DeleteStream(ctx, names.DeadLetterStream); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return err
	}
	return nil
}
