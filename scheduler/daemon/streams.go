package daemon

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/internal/names"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/internal/tenancy"
)

// Tenant streams: a tenant's own JetStream streams, for its topologies'
// input and output (builtin:stream, connectors/tenantstream.go). They live
// in the tenant's NATS account, made by the daemon's connection for the
// tenant (space.nc), so a request acts on its principal's tenant's streams
// only (another tenant's stream of the name is not found, as a missing
// one), and they count against the tenant's JetStream disk quota: the
// account's limit bounds them all, and each stream's size is bounded when
// it is made. A topology's hosts reach the streams it names and no other
// (natsauth.HostPermissions).

// Bounds of the stream routes.
const (
	// maxStreamReadBytes bounds one read's message data.
	maxStreamReadBytes = 4 << 20
	// streamOpTimeout bounds each JetStream call of a stream route.
	streamOpTimeout = 10 * time.Second
)

// The JetStream server's errors for a stream over its account's limits
// (nats.go names neither).
const (
	jsErrInsufficientResources jetstream.ErrorCode = 10023
	jsErrStorageExceeded       jetstream.ErrorCode = 10047
)

// topologyStreams are the tenant streams top's builtin:stream components
// name: its hosts' credential reaches those.
func topologyStreams(top *ardea.Topology) []string {
	var out []string
	for _, c := range top.Components {
		if c.Module == ardea.BuiltinPrefix+"stream" && c.Config["stream"] != "" {
			out = append(out, c.Config["stream"])
		}
	}
	return out
}

// checkStreams refuses a topology whose builtin:stream components name a
// stream its tenant does not have: its hosts may not make one. Without
// NATS accounts (`ardea run`, in process) the built-in makes a missing
// stream itself.
func (d *Daemon) checkStreams(ctx context.Context, sp *tenancy.Space, top *ardea.Topology) error {
	if d.ten.Accounts() == nil {
		return nil
	}
	var js jetstream.JetStream
	for _, c := range top.Components {
		name := c.Config["stream"]
		if c.Module != ardea.BuiltinPrefix+"stream" || connectors.ValidStreamName(name) != nil {
			continue // not one, or its config's error is reported by validation
		}
		if js == nil {
			var err error
			if js, err = jetstream.New(sp.Conn()); err != nil {
				return err
			}
		}
		st, _ := names.TenantStream(name)
		cctx, cancel := context.WithTimeout(ctx, streamOpTimeout)
		_, err := js.Stream(cctx, st)
		cancel()
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return newErr(ErrBadRequest, "component %s: tenant %s has no stream %s: create it first (ardea stream create %s)", c.Name, sp.Tenant(), name, name)
		}
		if err != nil {
			return fmt.Errorf("component %s: stream %s: %w", c.Name, name, err)
		}
	}
	return nil
}

// tenantJS is JetStream in the account of the tenant ctx acts for.
func (d *Daemon) tenantJS(ctx context.Context) (jetstream.JetStream, *tenancy.Space, error) {
	sp, err := d.space(ctx)
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(sp.Conn())
	if err != nil {
		return nil, nil, err
	}
	return js, sp, nil
}

// tenantStream binds to the caller's tenant stream name.
func (d *Daemon) tenantStream(ctx context.Context, name string) (jetstream.Stream, error) {
	if err := connectors.ValidStreamName(name); err != nil {
		return nil, newErr(ErrBadRequest, "%v", err)
	}
	js, sp, err := d.tenantJS(ctx)
	if err != nil {
		return nil, err
	}
	st, _ := names.TenantStream(name)
	s, err := js.Stream(ctx, st)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, newErr(ErrNotFound, "tenant %s has no stream %s (ardea stream ls)", sp.Tenant(), name)
	}
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", name, err)
	}
	return s, nil
}

func streamInfo(name string, in *jetstream.StreamInfo) api.StreamInfo {
	return api.StreamInfo{Name: name, Messages: in.State.Msgs, Bytes: in.State.Bytes, MaxBytes: in.Config.MaxBytes,
		FirstSeq: in.State.FirstSeq, LastSeq: in.State.LastSeq, Created: in.Created}
}

// StreamInfo is the caller's tenant stream name's info.
func (d *Daemon) StreamInfo(ctx context.Context, name string) (api.StreamInfo, error) {
	s, err := d.tenantStream(ctx, name)
	if err != nil {
		return api.StreamInfo{}, err
	}
	return streamInfo(name, s.CachedInfo()), nil
}

// CreateStream makes the caller's tenant stream req.Name, bounded by the
// tenant's JetStream disk quota.
func (d *Daemon) CreateStream(ctx context.Context, req api.CreateStreamRequest) (api.StreamInfo, error) {
	if err := connectors.ValidStreamName(req.Name); err != nil {
		return api.StreamInfo{}, newErr(ErrBadRequest, "%v", err)
	}
	if req.MaxBytes < 0 {
		return api.StreamInfo{}, newErr(ErrBadRequest, "stream %s: max_bytes %d: want a positive size (0: the default)", req.Name, req.MaxBytes)
	}
	js, sp, err := d.tenantJS(ctx)
	if err != nil {
		return api.StreamInfo{}, err
	}
	size := req.MaxBytes
	if size == 0 {
		size = connectors.TenantStreamDefaultMaxBytes
	}
	if disk := d.ten.JetStreamLimits(ctx, sp.Tenant()).DiskBytes; disk > 0 {
		if req.MaxBytes > disk {
			return api.StreamInfo{}, newErr(ErrForbidden, "stream %s: max_bytes %d is over tenant %s's quota jetstream_disk (%d bytes)", req.Name, req.MaxBytes, sp.Tenant(), disk)
		}
		size = min(size, disk)
	}
	cfg := connectors.TenantStreamConfig(req.Name, size)
	cfg.Replicas = d.node.Replicas()
	cctx, cancel := context.WithTimeout(ctx, streamOpTimeout)
	defer cancel()
	s, err := js.CreateStream(cctx, cfg)
	var apiErr *jetstream.APIError
	switch {
	case errors.Is(err, jetstream.ErrStreamNameAlreadyInUse):
		return api.StreamInfo{}, newErr(ErrExists, "tenant %s already has a stream %s", sp.Tenant(), req.Name)
	case errors.As(err, &apiErr) && (apiErr.ErrorCode == jsErrStorageExceeded || apiErr.ErrorCode == jsErrInsufficientResources):
		return api.StreamInfo{}, newErr(ErrForbidden, "stream %s (%d bytes): over tenant %s's quota jetstream_disk: %s", req.Name, size, sp.Tenant(), apiErr.Description)
	case err != nil:
		return api.StreamInfo{}, fmt.Errorf("stream %s: %w", req.Name, err)
	}
	return streamInfo(req.Name, s.CachedInfo()), nil
}

// ListStreams lists the caller's tenant streams.
func (d *Daemon) ListStreams(ctx context.Context) ([]api.StreamInfo, error) {
	js, _, err := d.tenantJS(ctx)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, streamOpTimeout)
	defer cancel()
	out := []api.StreamInfo{}
	l := js.ListStreams(cctx, jetstream.WithStreamListSubject(names.TenantSubjectPrefix+"*"))
	for in := range l.Info() {
		if name, ok := strings.CutPrefix(in.Config.Name, names.TenantStreamPrefix); ok {
			out = append(out, streamInfo(name, in))
		}
	}
	if err := l.Err(); err != nil {
		return nil, fmt.Errorf("streams: %w", err)
	}
	return out, nil
}

// Publish appends msgs to the caller's tenant stream name.
func (d *Daemon) Publish(ctx context.Context, name string, msgs []string) (api.PublishResult, error) {
	s, err := d.tenantStream(ctx, name)
	if err != nil {
		return api.PublishResult{}, err
	}
	js, _, err := d.tenantJS(ctx)
	if err != nil {
		return api.PublishResult{}, err
	}
	_, subject := names.TenantStream(name)
	cctx, cancel := context.WithTimeout(ctx, streamOpTimeout)
	defer cancel()
	var res api.PublishResult
	for i, m := range msgs {
		ack, err := js.Publish(cctx, subject, []byte(m), jetstream.WithExpectStream(s.CachedInfo().Config.Name))
		if err != nil {
			return res, fmt.Errorf("stream %s: message %d (%d published): %w", name, i+1, res.Published, err)
		}
		res.Published++
		res.LastSeq = ack.Sequence
	}
	return res, nil
}

// ReadStream returns up to limit messages of the caller's tenant stream
// name from sequence from on (the stream's first when from is below it).
func (d *Daemon) ReadStream(ctx context.Context, name string, from uint64, limit int) (api.StreamRead, error) {
	if limit <= 0 || limit > api.MaxStreamRead {
		return api.StreamRead{}, newErr(ErrBadRequest, "limit %d: want 1 to %d messages", limit, api.MaxStreamRead)
	}
	s, err := d.tenantStream(ctx, name)
	if err != nil {
		return api.StreamRead{}, err
	}
	st := s.CachedInfo().State
	out := api.StreamRead{Stream: name, Messages: []api.StreamMessage{}, Next: max(from, st.FirstSeq)}
	size := 0
	for seq := out.Next; seq <= st.LastSeq && len(out.Messages) < limit && size < maxStreamReadBytes; seq++ {
		cctx, cancel := context.WithTimeout(ctx, streamOpTimeout)
		m, err := s.GetMsg(cctx, seq)
		cancel()
		out.Next = seq + 1
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // deleted, or dropped past the stream's size
		}
		if err != nil {
			return out, fmt.Errorf("stream %s: message %d: %w", name, seq, err)
		}
		out.Messages = append(out.Messages, api.StreamMessage{Seq: m.Sequence, Time: m.Time, Data: string(m.Data)})
		size += len(m.Data)
	}
	return out, nil
}

// DeleteStream removes the caller's tenant stream name and its messages.
func (d *Daemon) DeleteStream(ctx context.Context, name string) error {
	s, err := d.tenantStream(ctx, name)
	if err != nil {
		return err
	}
	js, _, err := d.tenantJS(ctx)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, streamOpTimeout)
	defer cancel()
	if err := js.DeleteStream(cctx, s.CachedInfo().Config.Name); err != nil {
		return fmt.Errorf("stream %s: %w", name, err)
	}
	return nil
}
