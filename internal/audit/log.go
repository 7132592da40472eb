package audit

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/internal/jsretry"

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
	// Replicas of the streams over a cluster's nodes (0 or 1: one copy).
	Replicas int

	// Refused calls, and calls without a valid token, go to a stream of
	// their own (RefusedStream, default Stream+"_refused") with its own
	// size (RefusedMaxBytes, default a quarter of MaxBytes) and MaxAge, so
	// that a flood of them can never push the records of authenticated
	// calls out. They are recorded one by one up to RefusedRate a second
	// (RefusedBurst at once) per tenant and source; past it they are
	// counted, and one record per tenant, source and SummaryInterval
	// (ActionRefusedSummary) says how many were not recorded. Defaults:
	// DefaultRefusedRate, DefaultRefusedBurst, DefaultSummaryInterval.
	RefusedStream   string
	RefusedMaxBytes int64
	RefusedRate     float64
	RefusedBurst    int
	SummaryInterval time.Duration
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
// The refused stream's subjects are refusedPrefix's likewise.
const (
	subjectPrefix = "ardea_audit"
	refusedPrefix = "ardea_audit_refused"
)

func subjectOf(prefix, tenant string) string {
	if tenant == "" || !names.Valid(tenant) {
		return prefix + ".none"
	}
	return prefix + ".t." + tenant
}

// Log is the audit log on two JetStream streams: authenticated calls, and
// refused ones (Options). Its methods may be called concurrently.
type Log struct {
	js       jetstream.JetStream
	stream   string
	refused  string
	refusals *refusals
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
	if o.RefusedStream == "" {
		o.RefusedStream = o.Stream + "_refused"
	}
	if o.RefusedMaxBytes == 0 {
		o.RefusedMaxBytes = max(o.MaxBytes/4, 1)
	}
	if o.RefusedRate == 0 {
		o.RefusedRate = DefaultRefusedRate
	}
	if o.RefusedBurst == 0 {
		o.RefusedBurst = DefaultRefusedBurst
	}
	if o.SummaryInterval == 0 {
		o.SummaryInterval = DefaultSummaryInterval
	}
	if o.MaxAge < 0 || o.MaxBytes < 0 || o.RefusedMaxBytes < 0 {
		return nil, errorf("retention: max age %v and max bytes %d (refused calls: %d) must not be negative", o.MaxAge, o.MaxBytes, o.RefusedMaxBytes)
	}
	if o.RefusedRate < 0 || o.RefusedBurst < 0 || o.SummaryInterval < 0 {
		return nil, errorf("refused calls: rate %g, burst %d and summary interval %v must not be negative", o.RefusedRate, o.RefusedBurst, o.SummaryInterval)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, errorf("jetstream: %w", err)
	}
	storage := jetstream.FileStorage
	if o.Memory {
		storage = jetstream.MemoryStorage
	}
	if o.Replicas < 1 {
		o.Replicas = 1
	}
	for _, sc := range []struct {
		name, prefix, what string
		max                int64
	}{
		{o.Stream, subjectPrefix, "every state-changing API call with a valid token", o.MaxBytes},
		{o.RefusedStream, refusedPrefix, "every refused API call and every call without a valid token (rate-limited, the rest summarized)", o.RefusedMaxBytes},
	} {
		cfg := jetstream.StreamConfig{
			Name:        sc.name,
			Description: "Ardea's audit log: " + sc.what,
			Subjects:    []string{sc.prefix + ".>"},
			Retention:   jetstream.LimitsPolicy,
			Discard:     jetstream.DiscardOld,
			MaxAge:      o.MaxAge,
			MaxBytes:    sc.max,
			Replicas:    o.Replicas,
			MaxMsgSize:  MaxRecordBytes,
			Storage:     storage,
			DenyDelete:  true, // records leave by retention only
			DenyPurge:   true,
		}
		_, err = jsretry.Create(ctx, o.Replicas, func(ctx context.Context) (jetstream.Stream, error) {
			return js.CreateOrUpdateStream(ctx, cfg)
		})
		if err != nil {
			return nil, errorf("create stream %s: %w", sc.name, err)
		}
	}
	return &Log{js: js, stream: o.Stream, refused: o.RefusedStream, refusals: newRefusals(o)}, nil
}

// refusedRecord reports whether rec goes to the refused stream: a refused
// call, or one without a valid token.
func refusedRecord(rec Record) bool {
	return Refused(rec.Result.Code) || (rec.Principal == "" && rec.Tenant == "")
}

// Append appends rec, once the stream has stored it, within the bounds
// of a record (MaxRecordBytes). A refused call's record (or one without
// a valid token) goes to the refused stream, or past the rate of refusals
// into its source's summary; summaries whose interval has ended are
// appended first.
func (l *Log) Append(ctx context.Context, rec Record) error {
	now := time.Now()
	if rec.Time.IsZero() {
		rec.Time = now
	}
	if err := l.flush(ctx, now, false); err != nil {
		return err
	}
	refused := refusedRecord(rec)
	if refused && !l.refusals.admit(rec, now) {
		return nil
	}
	return l.publish(ctx, rec, refused)
}

// publish stores rec in its stream.
func (l *Log) publish(ctx context.Context, rec Record, refused bool) error {
	rec, data, err := bound(rec)
	if err != nil {
		return errorf("encode record: %w", err)
	}
	stream, subject := l.stream, subjectOf(subjectPrefix, rec.Tenant)
	if refused {
		stream, subject = l.refused, subjectOf(refusedPrefix, rec.Tenant)
	}
	if _, err := l.js.Publish(ctx, subject, data, jetstream.WithExpectStream(stream)); err != nil {
		return errorf("append to %s: %w", stream, err)
	}
	return nil
}

// flush appends the summaries of refused calls that are due (all if all).
func (l *Log) flush(ctx context.Context, now time.Time, all bool) error {
	for _, s := range l.refusals.due(now, all) {
		if err := l.publish(ctx, s, true); err != nil {
			return err
		}
	}
	return nil
}

// fetchBatch is how many records one pull asks for.
const fetchBatch = 256

// Query returns the records f selects from both streams, oldest first:
// the newest f.Limit of those at or after f.Since. The summaries of
// refused calls counted so far are appended first. It reads each stream backwards from the stream's end
// in growing windows of sequence numbers (the limit, then four times more
// each round) and stops once it has the limit, reached the stream's start
// or a record stored before Since, so asking for the newest hundred costs
// about a hundred records, not the stream.
func (l *Log) Query(ctx context.Context, f Filter) ([]Record, error) {
	if f.Tenant != "" && !names.Valid(f.Tenant) {
		return nil, errorf("tenant %q: want letters, digits, '_' or '-'", f.Tenant)
	}
	if err := l.flush(ctx, time.Now(), true); err != nil {
		return nil, err
	}
	var all []Record
	for _, sc := range []struct{ stream, prefix string }{{l.stream, subjectPrefix}, {l.refused, refusedPrefix}} {
		subject := sc.prefix + ".>"
		if f.Tenant != "" {
			subject = subjectOf(sc.prefix, f.Tenant)
		}
		recs, err := l.query(ctx, sc.stream, subject, f)
		if err != nil {
			return nil, err
		}
		all = append(all, recs...)
	}
	slices.SortStableFunc(all, func(a, b Record) int { return a.Time.Compare(b.Time) })
	if limit := f.limit(); len(all) > limit {
		all = all[len(all)-limit:]
	}
	return all, nil
}

// query is Query of one stream's subject.
func (l *Log) query(ctx context.Context, stream, subject string, f Filter) ([]Record, error) {
	s, err := l.js.Stream(ctx, stream)
	if err != nil {
		return nil, errorf("read %s: %w", stream, err)
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
		got, oldest, err := l.read(ctx, stream, subject, start, end, f.Since)
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
func (l *Log) read(ctx context.Context, stream, subject string, start, end uint64, since time.Time) ([]Record, time.Time, error) {
	cons, err := l.js.CreateConsumer(ctx, stream, jetstream.ConsumerConfig{
		AckPolicy:         jetstream.AckNonePolicy,
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       start,
		FilterSubject:     subject,
		MemoryStorage:     true,
		InactiveThreshold: time.Minute, // the server removes it if this call dies before deleting it
	})
	if err != nil {
		return nil, time.Time{}, errorf("read %s: %w", stream, err)
	}
	defer func() {
		_ = l.js.DeleteConsumer(context.WithoutCancel(ctx), stream, cons.CachedInfo().Name)
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
			return nil, oldest, errorf("read %s: %w", stream, err)
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
			return nil, oldest, errorf("read %s: %w", stream, err)
		}
		if done || n == 0 {
			return recs, oldest, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, oldest, err
		}
	}
}
