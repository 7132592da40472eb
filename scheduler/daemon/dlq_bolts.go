package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/container"
	"github.com/ardea-dev/ardea/scheduler/internal/tenancy"
	"github.com/ardea-dev/ardea/scheduler/internal/tenantdata"
	"github.com/ardea-dev/ardea/scheduler/settings"
)

// A tenant's bolts' dead letters (settings.MachinePolicy.BoltDeadLetter)
// go, with NATS accounts, to the tenant's dead-letter stream
// (names.DeadLetterStream in its account, container.PublishDeadLetter):
// they count against its quota jetstream_disk, the stream's bound
// (container.DeadLetterStreamMaxBytes) is reserved out of it, a topology's
// hosts publish only their own topology's subjects, a kill purges the
// topology's subjects, and deleting the tenant removes its account with
// the stream (both tenancy's). Without accounts (in process) they go to
// files in a directory of the tenant's under the data dir (its
// MachinePolicy.DeadLetterDir), as the default tenant's go where
// topology.bolt.dead_letter names. The daemon makes the stream and reads
// the records its containers wrote.

// minDeadLetterStreamBytes is the smallest bound ensureDeadLetterStream
// halves the stream's bound down to when the tenant's quota cannot
// reserve it.
const minDeadLetterStreamBytes = 64 << 10

// ensureDeadLetterStream makes (or updates the bound of) sp's tenant's
// dead-letter stream, if its policy places dead letters in one. The bound
// follows the tenant's quota jetstream_disk (an eighth of it, at most
// settings.MaxDeadLetterBytes), halved while the account cannot reserve
// it. A stream it cannot make is logged: the dead letters are then
// reported dropped with the publish's error.
func (d *Daemon) ensureDeadLetterStream(ctx context.Context, sp *tenancy.Space) {
	p := d.ten.MachinePolicy(sp.Tenant())
	if p.DeadLetterStream == "" {
		return
	}
	js, err := jetstream.New(sp.Conn())
	if err == nil {
		cfg := container.DeadLetterStreamConfig(sp.Tenant(), container.DeadLetterStreamMaxBytes(d.ten.JetStreamLimits(ctx, sp.Tenant()).DiskBytes))
		cfg.Replicas = d.node.Replicas()
		for {
			cctx, cancel := context.WithTimeout(ctx, tenantdata.OpTimeout)
			_, err = js.CreateOrUpdateStream(cctx, cfg)
			cancel()
			if err == nil || cfg.MaxBytes/2 < minDeadLetterStreamBytes || tenantdata.OverQuota(err) == nil {
				break
			}
			cfg.MaxBytes /= 2
		}
		if err != nil {
			err = fmt.Errorf("max_bytes %d: %w", cfg.MaxBytes, err)
		}
	}
	if err != nil {
		d.log.Warn("the tenant's dead-letter stream", "tenant", sp.Tenant(), "stream", p.DeadLetterStream, "err", err)
	}
}

// boltDeadLetters lists the dead letters of top's wasm bolts (of only, if
// set), read from where sp's tenant's policy places them
// (settings.MachinePolicy.BoltDeadLetter: a confined tenant's are in the
// daemon's place in its space, its dead-letter stream), each file read
// bounded (settings.MaxDeadLetterBytes), a stream by its bound. found
// says whether only names one of those bolts.
func (d *Daemon) boltDeadLetters(ctx context.Context, sp *tenancy.Space, top *ardea.Topology, only string) (dl []api.DeadLetter, found bool, err error) {
	p := d.ten.MachinePolicy(sp.Tenant())
	for _, c := range top.Components {
		if c.Kind != ardea.Bolt || c.ModuleKind() == ardea.ModuleBuiltin || (only != "" && c.Name != only) {
			continue
		}
		found = found || only != ""
		place, err := p.BoltDeadLetter(top, c)
		if err != nil {
			return nil, found, err
		}
		if place.None() && only != "" {
			return nil, found, fmt.Errorf("component %q: %w (a wasm bolt keeps them effectively once, with %s set)", c.Name, connectors.ErrNoDeadLetters, settings.KeyDeadLetter)
		}
		var recs []container.BoltDeadLetter
		switch {
		case place.None():
			continue
		case place.Stream != "":
			recs, err = streamDeadLetters(ctx, sp, place)
		default:
			recs, err = fileDeadLetters(place.File)
		}
		if err != nil {
			return nil, found, fmt.Errorf("component %s: %w", c.Name, err)
		}
		for _, rec := range recs {
			dl = append(dl, api.DeadLetter{Component: c.Name, Destination: "bolt dead letters",
				Source: "tuple " + rec.Hash, Error: rec.Error, Value: rec.Tuple})
		}
	}
	return dl, found, nil
}

// fileDeadLetters reads a bolt's dead-letter file.
func fileDeadLetters(path string) ([]container.BoltDeadLetter, error) {
	b, err := settings.ReadDeadLetters(path)
	if err != nil {
		return nil, err
	}
	var out []container.BoltDeadLetter
	for n, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var rec container.BoltDeadLetter
		if err := json.Unmarshal(line, &rec); err != nil {
			return nil, fmt.Errorf("dead letters line %d: %w", n+1, err)
		}
		out = append(out, rec)
	}
	return out, nil
}

// streamDeadLetters reads a bolt's dead letters from sp's tenant's
// dead-letter stream: the messages on its subjects, in order (the
// stream's bound bounds them).
func streamDeadLetters(ctx context.Context, sp *tenancy.Space, place settings.DeadLetterPlace) ([]container.BoltDeadLetter, error) {
	js, err := jetstream.New(sp.Conn())
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, tenantdata.OpTimeout)
	s, err := js.Stream(cctx, place.Stream)
	cancel()
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil // none written yet
	}
	if err != nil {
		return nil, fmt.Errorf("dead-letter stream %s: %w", place.Stream, err)
	}
	var out []container.BoltDeadLetter
	for seq := uint64(1); ; {
		cctx, cancel := context.WithTimeout(ctx, tenantdata.OpTimeout)
		m, err := s.GetMsg(cctx, seq, jetstream.WithGetMsgSubject(place.Subject+".*"))
		cancel()
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("dead-letter stream %s: %w", place.Stream, err)
		}
		var rec container.BoltDeadLetter
		if err := json.Unmarshal(m.Data, &rec); err != nil {
			return nil, fmt.Errorf("dead-letter stream %s: message %d: %w", place.Stream, m.Sequence, err)
		}
		out = append(out, rec)
		seq = m.Sequence + 1
	}
}
