package audit

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/internal/names"
)

// Options configure the audit log's stream.
type Options struct {
	// Stream is the JetStream stream's name; default DefaultStream.
	Stream string
	// MaxAge drops records older than it; default DefaultMaxAge.
	MaxAge time.Duration
	// MaxBytes bounds the stream's size; the oldest records go first;
	// default DefaultMaxBytes.
	MaxBytes int64
	// Memory keeps the stream in memory (tests); default on disk.
	Memory bool
}

// Defaults of Options.
const (
	DefaultStream   = "ardea_audit"
	DefaultMaxAge   = 90 * 24 * time.Hour
	DefaultMaxBytes = 256 << 20
)

// Subjects: ardea_audit.t.<tenant> for a tenant's records and
// ardea_audit.none for calls without a valid token (so that a tenant's
// filter can never match them, whatever the tenant is named). The prefix
// is apart from the topologies' ardea.<tenant>.> namespace.
const (
	subjectPrefix = "ardea_audit"
	subjectNone   = subjectPrefix + ".none"
)

func subjectOf(tenant string) string {
	if tenant == "" || !names.Valid(tenant) {
		return subjectNone
	}
	return subjectPrefix + ".t." + tenant
}

// Log is the audit log on a JetStream stream. Its methods may be called
// concurrently.
type Log struct {
	js     jetstream.JetStream
	stream string
}

// Open creates the stream (or updates its retention to o's) and returns
// the log. nc is the daemon's own connection: no tenant's credential may
// reach the stream.
func Open(ctx context.Context, nc *nats.Conn, o Options) (*Log, error) {
	if o.Stream == "" {
		o.Stream = DefaultStream
	}
	if o.MaxAge == 0 {
		o.MaxAge = DefaultMaxAge
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxAge < 0 || o.MaxBytes < 0 {
		return nil, errorf("retention: max age %v and max bytes %d must not be negative", o.MaxAge, o.MaxBytes)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, errorf("jetstream: %w", err)
	}
	storage := jetstream.FileStorage
	if o.Memory {
		storage = jetstream.MemoryStorage
	}
	_, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        o.Stream,
		Description: "Ardea's audit log: every state-changing and every refused API call",
		Subjects:    []string{subjectPrefix + ".>"},
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		MaxAge:      o.MaxAge,
		MaxBytes:    o.MaxBytes,
		Storage:     storage,
		Replicas:    1,
		DenyDelete:  true, // records leave by retention only
		DenyPurge:   true,
	})
	if err != nil {
		return nil, errorf("create stream %s: %w", o.Stream, err)
	}
	return &Log{js: js, stream: o.Stream}, nil
}

// Append appends rec, once the stream has stored it.
func (l *Log) Append(ctx context.Context, rec Record) error {
	if rec.Time.IsZero() {
		rec.Time = time.Now()
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return errorf("encode record: %w", err)
	}
	if _, err := l.js.Publish(ctx, subjectOf(rec.Tenant), data, jetstream.WithExpectStream(l.stream)); err != nil {
		return errorf("append to %s: %w", l.stream, err)
	}
	return nil
}

// fetchBatch is how many records one pull asks for.
const fetchBatch = 256

// Query returns the records f selects, oldest first: the newest f.Limit
// of those at or after f.Since. It reads backwards from the stream's end
// in growing windows of sequence numbers (the limit, then four times more
// each round) and stops once it has the limit, reached the stream's start
// or a record stored before Since, so asking for the newest hundred costs
// about a hundred records, not the stream.
func (l *Log) Query(ctx context.Context, f Filter) ([]Record, error) {
	subject := subjectPrefix + ".>"
	if f.Tenant != "" {
		if !names.Valid(f.Tenant) {
			return nil, errorf("tenant %q: want letters, digits, '_' or '-'", f.Tenant)
		}
		subject = subjectOf(f.Tenant)
	}
	s, err := l.js.Stream(ctx, l.stream)
	if err != nil {
		return nil, errorf("read %s: %w", l.stream, err)
	}
	st := s.CachedInfo().State
	limit := f.limit()
	var recs []Record // oldest first
	if st.Msgs == 0 {
		return []Record{}, nil
	}
	window, end := uint64(limit), st.LastSeq
	for {
		start := st.FirstSeq
		if end-st.FirstSeq >= window {
			start = end - window + 1
		}
		got, oldest, err := l.read(ctx, subject, start, end, f.Since)
		if err != nil {
			return nil, err
		}
		recs = append(got, recs...)
		if len(recs) >= limit || start == st.FirstSeq || (!oldest.IsZero() && oldest.Before(f.Since)) {
			break
		}
		end, window = start-1, window*4
	}
	if len(recs) > limit {
		recs = recs[len(recs)-limit:]
	}
	return recs, nil
}

// read returns the records of subject stored at sequences start..end
// with a time at or after since, oldest first, and when the first message
// it saw was stored (a record's time is when its request came, its stored
// time later: if that is before since, so is every earlier record's).
func (l *Log) read(ctx context.Context, subject string, start, end uint64, since time.Time) ([]Record, time.Time, error) {
	cons, err := l.js.CreateConsumer(ctx, l.stream, jetstream.ConsumerConfig{
		AckPolicy:         jetstream.AckNonePolicy,
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       start,
		FilterSubject:     subject,
		MemoryStorage:     true,
		InactiveThreshold: time.Minute, // the server removes it if this call dies before deleting it
	})
	if err != nil {
		return nil, time.Time{}, errorf("read %s: %w", l.stream, err)
	}
	defer func() {
		_ = l.js.DeleteConsumer(context.WithoutCancel(ctx), l.stream, cons.CachedInfo().Name)
	}()
	var (
		recs   []Record
		oldest time.Time
	)
	if cons.CachedInfo().NumPending == 0 {
		return nil, oldest, nil
	}
	for {
		batch, err := cons.FetchNoWait(fetchBatch)
		if err != nil {
			return nil, oldest, errorf("read %s: %w", l.stream, err)
		}
		n, done := 0, false
		for msg := range batch.Messages() {
			n++
			meta, err := msg.Metadata()
			if err != nil {
				continue
			}
			if meta.Sequence.Stream > end {
				done = true // appended since the query began, or read by the previous window
				continue
			}
			if meta.NumPending == 0 || meta.Sequence.Stream == end {
				done = true
			}
			if oldest.IsZero() {
				oldest = meta.Timestamp
			}
			var rec Record
			// Skip what is not a record rather than hide the others.
			if json.Unmarshal(msg.Data(), &rec) != nil || rec.Time.Before(since) {
				continue
			}
			recs = append(recs, rec)
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return nil, oldest, errorf("read %s: %w", l.stream, err)
		}
		if done || n == 0 {
			return recs, oldest, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, oldest, err
		}
	}
}
