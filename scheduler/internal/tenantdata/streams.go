package tenantdata

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/internal/names"
	"github.com/ardea-dev/ardea/scheduler/api"
)

// TopologyStreams are the tenant streams top's builtin:stream components
// name: its hosts' credential reaches those.
func TopologyStreams(top *ardea.Topology) []string {
	var out []string
	for _, c := range top.Components {
		if c.Module == ardea.BuiltinPrefix+"stream" && c.Config["stream"] != "" {
			out = append(out, c.Config["stream"])
		}
	}
	return out
}

// tenantStream binds to the caller's tenant stream name.
func (svc *Service) tenantStream(ctx context.Context, name string) (jetstream.Stream, error) {
	if err := connectors.ValidStreamName(name); err != nil {
		return nil, api.Errorf(api.ErrBadRequest, "%v", err)
	}
	js, sp, err := svc.tenantJS(ctx)
	if err != nil {
		return nil, err
	}
	st, _ := names.TenantStream(name)
	s, err := js.Stream(ctx, st)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, api.Errorf(api.ErrNotFound, "tenant %s has no stream %s (ardea stream ls)", sp.Tenant(), name)
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
func (svc *Service) StreamInfo(ctx context.Context, name string) (api.StreamInfo, error) {
	s, err := svc.tenantStream(ctx, name)
	if err != nil {
		return api.StreamInfo{}, err
	}
	return streamInfo(name, s.CachedInfo()), nil
}

// CreateStream makes the caller's tenant stream req.Name, bounded by the
// tenant's JetStream disk quota.
func (svc *Service) CreateStream(ctx context.Context, req api.CreateStreamRequest) (api.StreamInfo, error) {
	if err := connectors.ValidStreamName(req.Name); err != nil {
		return api.StreamInfo{}, api.Errorf(api.ErrBadRequest, "%v", err)
	}
	if req.MaxBytes < 0 {
		return api.StreamInfo{}, api.Errorf(api.ErrBadRequest, "stream %s: max_bytes %d: want a positive size (0: the default)", req.Name, req.MaxBytes)
	}
	js, sp, err := svc.tenantJS(ctx)
	if err != nil {
		return api.StreamInfo{}, err
	}
	size := req.MaxBytes
	if size == 0 {
		size = connectors.TenantStreamDefaultMaxBytes
	}
	if disk := svc.ten.JetStreamLimits(ctx, sp.Tenant()).DiskBytes; disk > 0 {
		if req.MaxBytes > disk {
			return api.StreamInfo{}, api.Errorf(api.ErrForbidden, "stream %s: max_bytes %d is over tenant %s's quota jetstream_disk (%d bytes)", req.Name, req.MaxBytes, sp.Tenant(), disk)
		}
		size = min(size, disk)
	}
	cfg := connectors.TenantStreamConfig(req.Name, size)
	cfg.Replicas = svc.replicas
	cctx, cancel := context.WithTimeout(ctx, OpTimeout)
	defer cancel()
	s, err := js.CreateStream(cctx, cfg)
	over := OverQuota(err)
	switch {
	case errors.Is(err, jetstream.ErrStreamNameAlreadyInUse):
		return api.StreamInfo{}, api.Errorf(api.ErrExists, "tenant %s already has a stream %s", sp.Tenant(), req.Name)
	case over != nil:
		return api.StreamInfo{}, api.Errorf(api.ErrForbidden, "stream %s (%d bytes): over tenant %s's quota jetstream_disk: %s", req.Name, size, sp.Tenant(), over.Description)
	case err != nil:
		return api.StreamInfo{}, fmt.Errorf("stream %s: %w", req.Name, err)
	}
	return streamInfo(req.Name, s.CachedInfo()), nil
}

// ListStreams lists the caller's tenant streams.
func (svc *Service) ListStreams(ctx context.Context) ([]api.StreamInfo, error) {
	js, _, err := svc.tenantJS(ctx)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, OpTimeout)
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
func (svc *Service) Publish(ctx context.Context, name string, msgs []string) (api.PublishResult, error) {
	s, err := svc.tenantStream(ctx, name)
	if err != nil {
		return api.PublishResult{}, err
	}
	js, _, err := svc.tenantJS(ctx)
	if err != nil {
		return api.PublishResult{}, err
	}
	_, subject := names.TenantStream(name)
	cctx, cancel := context.WithTimeout(ctx, OpTimeout)
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
func (svc *Service) ReadStream(ctx context.Context, name string, from uint64, limit int) (api.StreamRead, error) {
	if limit <= 0 || limit > api.MaxStreamRead {
		return api.StreamRead{}, api.Errorf(api.ErrBadRequest, "limit %d: want 1 to %d messages", limit, api.MaxStreamRead)
	}
	s, err := svc.tenantStream(ctx, name)
	if err != nil {
		return api.StreamRead{}, err
	}
	st := s.CachedInfo().State
	out := api.StreamRead{Stream: name, Messages: []api.StreamMessage{}, Next: max(from, st.FirstSeq)}
	size := 0
	for seq := out.Next; seq <= st.LastSeq && len(out.Messages) < limit && size < maxReadBytes; seq++ {
		cctx, cancel := context.WithTimeout(ctx, OpTimeout)
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
func (svc *Service) DeleteStream(ctx context.Context, name string) error {
	s, err := svc.tenantStream(ctx, name)
	if err != nil {
		return err
	}
	js, _, err := svc.tenantJS(ctx)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, OpTimeout)
	defer cancel()
	if err := js.DeleteStream(cctx, s.CachedInfo().Config.Name); err != nil {
		return fmt.Errorf("stream %s: %w", name, err)
	}
	return nil
}
