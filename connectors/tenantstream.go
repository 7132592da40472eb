package connectors

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/internal/names"
)

// The stream spout and sink (builtin:stream) read and write a tenant
// stream: a JetStream stream the tenant made for its own input and output
// (`ardea stream create NAME`, POST /api/v1/streams). They take a stream
// name, never an address: they use the container's own NATS connection
// (plugin.TaskContext.Bus), which in a daemon is the host's credential, in
// its tenant's account, so a name can reach only that tenant's streams,
// and inside the account only the streams named names.TenantStream (never
// the daemon's buckets). So they need no admin leave (docs/tenancy.md).
//
// They are the jetstream spout and sink (jetstream.go) on that
// connection: at most once a message is acked as it is emitted, at least
// once when its tuple tree completes (a failed tree naks it and JetStream
// redelivers it). A daemon's host may not make streams (its credential
// allows no stream create); a connection without a credential (`ardea
// run`'s embedded server) makes a missing stream on first use.

// TenantStreamDefaultMaxBytes bounds a tenant stream made without a size
// (by `ardea run`, or a create that names none): 1 GiB, and within its
// tenant's JetStream disk quota in any case.
const TenantStreamDefaultMaxBytes = 1 << 30

func init() {
	register(plugin.RegisterSpout(plugin.Spec{
		Name: "stream",
		Summary: "Reads one of the tenant's own streams (`ardea stream create`) through a durable consumer shared by the tasks (`subject`, `data` as a string); takes a stream name, no address, and needs no admin leave. " +
			"At most once it acks a message as it emits it, at least once when its tuple tree completes; a failed tree naks it (redelivered).",
		Fields: []plugin.Field{
			{Name: "stream", Type: plugin.TypeString, Required: true, Doc: "the tenant stream to read (letters, digits, '_' or '-'; see ardea stream ls)"},
			{Name: "durable", Type: plugin.TypeString, Default: "", Doc: "durable consumer name (letters, digits, '_' or '-'); empty: ardea-<topology>-<component>"},
			{Name: "batch", Type: plugin.TypeInt, Default: "256", Min: "1", Doc: "most messages fetched at once"},
			{Name: "ack_wait", Type: plugin.TypeDuration, Default: "30s", Min: "1ms", Doc: "a message not acked within this is redelivered"},
		},
		Outputs: map[string][]string{"default": {"subject", "data"}},
	}, newTenantStreamSpout))
	register(plugin.RegisterBolt(plugin.Spec{
		Name:    "stream",
		Summary: "Writes every tuple to one of the tenant's own streams as a JSON object (read it with `ardea stream read`); takes a stream name, no address, and needs no admin leave. Acks tuples once the stream stored them.",
		Fields: []plugin.Field{
			{Name: "stream", Type: plugin.TypeString, Required: true, Doc: "the tenant stream to write (letters, digits, '_' or '-'; see ardea stream ls)"},
			{Name: "timeout", Type: plugin.TypeDuration, Default: "10s", Min: "1ms", Doc: "how long a batch waits for the stream's acknowledgements"},
		},
	}, newTenantStreamSink))
}

// ValidStreamName checks a tenant stream's name.
func ValidStreamName(name string) error {
	if !names.Valid(name) {
		return fmt.Errorf("stream name %q: 1 to %d letters, digits, '_' or '-'", name, names.MaxLen)
	}
	return nil
}

// TenantStreamConfig is the JetStream configuration of tenant stream name
// (file storage, maxBytes at most, the oldest messages dropped past it; 0:
// TenantStreamDefaultMaxBytes). The daemon's create and `ardea run`'s
// first use make the same stream.
func TenantStreamConfig(name string, maxBytes int64) jetstream.StreamConfig {
	if maxBytes <= 0 {
		maxBytes = TenantStreamDefaultMaxBytes
	}
	stream, subject := names.TenantStream(name)
	return jetstream.StreamConfig{Name: stream, Subjects: []string{subject}, Storage: jetstream.FileStorage,
		Retention: jetstream.LimitsPolicy, Discard: jetstream.DiscardOld, MaxBytes: maxBytes,
		Description: "ardea tenant stream " + name}
}

func newTenantStreamSpout(cfg plugin.Config) (plugin.Spout, error) {
	r := cfg.Reader()
	name := r.String("stream")
	s := &jsSpout{tenant: true, name: name, durable: r.String("durable"), batch: int(r.Int("batch")), ackWait: r.Duration("ack_wait")}
	s.stream, _ = names.TenantStream(name)
	s.maxTuple, s.tupleSetting = r.TupleLimit()
	if err := r.Err(); err != nil {
		return nil, err
	}
	if err := ValidStreamName(name); err != nil {
		return nil, fmt.Errorf(`config "stream": %w`, err)
	}
	if s.durable != "" && !names.Valid(s.durable) {
		return nil, fmt.Errorf(`config "durable" %q: letters, digits, '_' or '-' only`, s.durable)
	}
	return s, nil
}

func newTenantStreamSink(cfg plugin.Config) (plugin.Bolt, error) {
	r := cfg.Reader()
	name := r.String("stream")
	s := &jsSink{tenant: true, name: name, timeout: r.Duration("timeout")}
	_, s.subject = names.TenantStream(name)
	if err := r.Err(); err != nil {
		return nil, err
	}
	if err := ValidStreamName(name); err != nil {
		return nil, fmt.Errorf(`config "stream": %w`, err)
	}
	return s, nil
}

// busJetStream is JetStream on the container's own connection.
func busJetStream(tc plugin.TaskContext) (jetstream.JetStream, error) {
	if tc.Bus == nil {
		return nil, errors.New("no NATS connection of the container (a tenant stream needs one)")
	}
	return jetstream.New(tc.Bus)
}

// openTenantStream binds to tenant stream name. A missing one is made when
// the connection carries no credential (`ardea run`'s embedded server);
// a daemon's host may not make streams, so it names the command that does.
func openTenantStream(ctx context.Context, js jetstream.JetStream, name string) (jetstream.Stream, error) {
	stream, _ := names.TenantStream(name)
	str, err := js.Stream(ctx, stream)
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return str, err
	}
	if o := js.Conn().Opts; o.UserJWT != nil || o.Nkey != "" || o.User != "" || o.Token != "" {
		return nil, fmt.Errorf("no stream %s in this tenant: create it first (ardea stream create %s)", name, name)
	}
	return js.CreateOrUpdateStream(ctx, TenantStreamConfig(name, 0))
}
