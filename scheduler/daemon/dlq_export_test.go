package daemon

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/internal/names"
)

// DeadLetterStream is tenant's dead-letter stream's info with the
// messages of each subject matching filter (State.Subjects), for the
// tests of where a tenant's bolts' dead letters go.
func (d *Daemon) DeadLetterStream(ctx context.Context, tenant, filter string) (*jetstream.StreamInfo, error) {
	sp, err := d.ten.Space(ctx, tenant)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(sp.Conn())
	if err != nil {
		return nil, err
	}
	s, err := js.Stream(ctx, names.DeadLetterStream)
	if err != nil {
		return nil, err
	}
	return s.Info(ctx, jetstream.WithSubjectFilter(filter))
}
