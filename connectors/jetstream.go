package connectors

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// The jetstream spout reads a NATS JetStream stream through a durable pull
// consumer shared by the spout's tasks (JetStream spreads the messages
// over them). Each message becomes a tuple (subject, data).
//
// At most once a message is acked to JetStream as it is emitted. At least
// once it is acked only when its tuple tree completes (the spout's Ack);
// a failed or timed-out tree naks it, and JetStream redelivers it (after
// ack_wait, a message whose ack never came is redelivered too, so a
// crashed container loses nothing).
//
// The jetstream sink publishes every input tuple to a subject as a JSON
// object keyed by field name, waits for JetStream's acknowledgements of
// the batch, and only then acks the tuples (at least once; a publish that
// fails fails its tuple).

func init() {
	register(plugin.RegisterSpout(plugin.Spec{
		Name: "jetstream",
		Summary: "Reads a NATS JetStream stream through a durable pull consumer shared by the tasks (`subject`, `data` as bytes). " +
			"At most once it acks a message as it emits it, at least once when its tuple tree completes; a failed tree naks it (JetStream redelivers it, as any message not acked within ack_wait).",
		Fields: []plugin.Field{
			{Name: "url", Type: plugin.TypeString, Reach: plugin.ReachURL, Required: true, Doc: "NATS server URL"},
			{Name: "stream", Type: plugin.TypeString, Required: true, Doc: "JetStream stream to read"},
			{Name: "subject", Type: plugin.TypeString, Default: "", Doc: "only messages on this subject (wildcards allowed); empty: all of the stream"},
			{Name: "durable", Type: plugin.TypeString, Default: "", Doc: "durable consumer name; empty: ardea-<topology>-<component>"},
			{Name: "batch", Type: plugin.TypeInt, Default: "256", Min: "1", Doc: "most messages fetched at once"},
			{Name: "ack_wait", Type: plugin.TypeDuration, Default: "30s", Min: "1ms", Doc: "JetStream redelivers a message not acked within this"},
			{Name: "max_retries", Type: plugin.TypeInt, Default: "0", Min: "0", Doc: "at least once: a message delivered this many times whose tree fails goes to dead_letter_subject; 0 = redeliver forever"},
			{Name: "dead_letter_subject", Type: plugin.TypeString, Default: "", Doc: "subject (captured by a JetStream stream) that receives the messages given up, with headers saying where they came from; required with max_retries"},
		},
		Outputs: map[string][]string{"default": {"subject", "data"}},
	}, newJetStreamSpout))
	register(plugin.RegisterBolt(plugin.Spec{
		Name:    "jetstream",
		Summary: "Publishes every tuple to a NATS JetStream subject as a JSON object; acks tuples once JetStream stored them.",
		Fields: []plugin.Field{
			{Name: "url", Type: plugin.TypeString, Reach: plugin.ReachURL, Required: true, Doc: "NATS server URL"},
			{Name: "subject", Type: plugin.TypeString, Required: true, Doc: "subject to publish to (a stream must capture it)"},
			{Name: "timeout", Type: plugin.TypeDuration, Default: "10s", Min: "1ms", Doc: "how long a batch waits for JetStream's acknowledgements"},
		},
	}, newJetStreamSink))
}

type jsSpout struct {
	url, stream, subject, durable string
	// tenant: a tenant stream (tenantstream.go), on the container's own
	// connection (plugin.TaskContext.Bus) rather than one to url; name is
	// its name as the tenant knows it.
	tenant  bool
	name    string
	batch   int
	ackWait time.Duration
	// kvPrefix: a tenant KV bucket's spout (tenantkv.go), whose stream
	// holds the keys on <kvPrefix><key>; deliver is where its durable
	// consumer starts.
	kvPrefix string
	deliver  jetstream.DeliverPolicy

	comp    string
	stream0 uint16
	nc      *nats.Conn
	cons    jetstream.Consumer
	acking  bool
	next    uint64                   // message ids, at least once
	pending map[uint64]jetstream.Msg // awaiting the tree's outcome
	vals    []byte
	metric  func(name string, delta int64)

	maxRetries int
	dlq        string
	js         jetstream.JetStream
	topology   string
	why        map[uint64]string // how a pending message's tree failed (NoteFailures)

	maxTuple     int64 // the tuple limit, and the setting it comes from
	tupleSetting string
	// failed: a message over the tuple limit without a dead-letter subject
	// ended the input; Next reports it once nothing is pending.
	failed error
}

func newJetStreamSpout(cfg plugin.Config) (plugin.Spout, error) {
	r := cfg.Reader()
	s := &jsSpout{url: r.String("url"), stream: r.String("stream"), subject: r.String("subject"),
		durable: r.String("durable"), batch: int(r.Int("batch")), ackWait: r.Duration("ack_wait"),
		maxRetries: int(r.Int("max_retries")), dlq: r.String("dead_letter_subject")}
	s.maxTuple, s.tupleSetting = r.TupleLimit()
	if err := r.Err(); err != nil {
		return nil, err
	}
	if s.maxRetries > 0 && s.dlq == "" {
		return nil, errors.New(`config "max_retries": needs "dead_letter_subject", the subject that receives the messages given up`)
	}
	return s, nil
}

func (s *jsSpout) errorf(format string, args ...any) error {
	return fmt.Errorf("component %q: %s: %w", s.comp, s.what(), fmt.Errorf(format, args...))
}

// count adds one to the spout's counter name, prefixed by its
// connector's name (jetstream_..., stream_..., kv_...).
func (s *jsSpout) count(name string) {
	if s.kvPrefix != "" {
		s.metric("kv_"+name, 1)
		return
	}
	if s.tenant {
		s.metric("stream_"+name, 1)
		return
	}
	s.metric("jetstream_"+name, 1)
}

// what names the spout in errors.
func (s *jsSpout) what() string {
	if s.kvPrefix != "" {
		return "kv spout (bucket " + s.name + ")"
	}
	if s.tenant {
		return "stream spout (stream " + s.name + ")"
	}
	return "jetstream spout (stream " + s.stream + ")"
}

func (s *jsSpout) Open(ctx context.Context, tc plugin.TaskContext, _ plugin.Collector) error {
	s.comp = tc.Component
	s.metric = tc.Metric
	if s.metric == nil {
		s.metric = func(string, int64) {}
	}
	kind, nfields := "jetstream spout", 2
	if s.kvPrefix != "" {
		kind, nfields = "kv spout", 4
	}
	st, err := outputStream(tc, kind, "default", nfields)
	if err != nil {
		return err
	}
	s.stream0 = st
	if s.tenant && tc.Checkpointing && !tc.Acking {
		// Its messages are acked as emitted: a rollback to a checkpoint
		// could not replay them.
		what := "a tenant stream is"
		if s.kvPrefix != "" {
			what = "a tenant KV bucket's updates are"
		}
		return s.errorf("topology.reliability effectively_once is not supported (%s not replayed from a checkpoint); use at_least_once", what)
	}
	if s.durable == "" {
		s.durable = "ardea-" + tc.Topology + "-" + tc.Component
	}
	var js jetstream.JetStream
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var str jetstream.Stream
	if s.tenant {
		if js, err = busJetStream(tc); err != nil {
			return s.errorf("%w", err)
		}
		if s.kvPrefix != "" {
			if _, err = openTenantKV(cctx, js, s.name); err == nil {
				str, err = js.Stream(cctx, s.stream)
			}
		} else {
			str, err = openTenantStream(cctx, js, s.name)
		}
	} else {
		s.nc, err = nats.Connect(s.url, nats.Name("ardea "+tc.Topology+"/"+tc.Component))
		if err != nil {
			return s.errorf("connect %s: %w", s.url, err)
		}
		if js, err = jetstream.New(s.nc); err != nil {
			return s.errorf("%w", err)
		}
		str, err = js.Stream(cctx, s.stream)
	}
	if err != nil {
		return s.errorf("%w", err)
	}
	s.js, s.topology, s.why = js, tc.Topology, map[uint64]string{}
	s.cons, err = str.CreateOrUpdateConsumer(cctx, jetstream.ConsumerConfig{
		Durable: s.durable, AckPolicy: jetstream.AckExplicitPolicy, FilterSubject: s.subject, AckWait: s.ackWait,
		DeliverPolicy: s.deliver,
	})
	if err != nil {
		return s.errorf("consumer %s: %w", s.durable, err)
	}
	s.acking = tc.Acking
	s.pending = map[uint64]jetstream.Msg{}
	return nil
}

func (s *jsSpout) Next(ctx context.Context, max int, out plugin.Collector) (plugin.Status, error) {
	if s.failed != nil {
		if len(s.pending) == 0 {
			return plugin.Done, s.failed
		}
		return plugin.Idle, nil
	}
	batch, err := s.cons.FetchNoWait(min(max, s.batch))
	if err != nil {
		return plugin.Idle, s.errorf("fetch: %w", err)
	}
	n := 0
	for m := range batch.Messages() {
		if s.failed != nil {
			m.Nak() // after the oversized message: left for the next run
			continue
		}
		switch {
		case s.kvPrefix != "":
			s.vals = s.appendKVValues(s.vals[:0], m)
		case s.tenant:
			// A tenant stream holds lines of text.
			s.vals = tuple.AppendValues(s.vals[:0], tuple.Str(m.Subject()), tuple.Value{Kind: tuple.String, B: m.Data()})
		default:
			s.vals = tuple.AppendValues(s.vals[:0], tuple.Str(m.Subject()), tuple.Bin(m.Data()))
		}
		if size := int64(len(s.vals)); size > s.maxTuple {
			s.oversized(ctx, m, size)
			continue
		}
		var id uint64
		if s.acking {
			s.next++
			id = s.next
			s.pending[id] = m
		}
		if err := out.Emit(s.stream0, tuple.NoTask, id, nil, s.vals); err != nil {
			return plugin.Emitted, err
		}
		if !s.acking {
			if err := m.Ack(); err != nil {
				return plugin.Emitted, s.errorf("ack: %w", err)
			}
		}
		s.count("messages")
		n++
	}
	if err := batch.Error(); err != nil && n == 0 {
		return plugin.Idle, nil // nothing there yet
	}
	if n == 0 {
		return plugin.Idle, nil
	}
	return plugin.Emitted, nil
}

// Ack acknowledges the messages of completed trees to JetStream.
func (s *jsSpout) Ack(ctx context.Context, ids []uint64, _ plugin.Collector) error {
	for _, id := range ids {
		if m := s.pending[id]; m != nil {
			delete(s.pending, id)
			if err := m.Ack(); err != nil {
				return s.errorf("ack: %w", err)
			}
		}
	}
	return nil
}

// Fail naks them: JetStream redelivers them (to any task of the spout). A
// message delivered max_retries times goes to the dead-letter subject and
// is terminated instead.
func (s *jsSpout) Fail(ctx context.Context, ids []uint64, _ plugin.Collector) error {
	for _, id := range ids {
		m := s.pending[id]
		if m == nil {
			continue
		}
		delete(s.pending, id)
		why := s.why[id]
		delete(s.why, id)
		if s.maxRetries > 0 {
			if md, err := m.Metadata(); err == nil && md.NumDelivered >= uint64(s.maxRetries) {
				if err := s.deadLetter(ctx, m, md, why); err == nil {
					continue
				}
				// Not stored: nak, and try again at its next failure.
			}
		}
		if err := m.Nak(); err != nil {
			return s.errorf("nak: %w", err)
		}
		s.count("nacked")
	}
	return nil
}

// oversized handles m, whose tuple exceeds the tuple limit: to the
// dead-letter subject (and terminated) if there is one, else (or if that
// failed) it is left for redelivery and s.failed ends the input.
func (s *jsSpout) oversized(ctx context.Context, m jetstream.Msg, size int64) {
	md, err := m.Metadata()
	src := m.Subject()
	if err == nil {
		src = fmt.Sprintf("%s/%d", md.Stream, md.Sequence.Stream)
	}
	if s.dlq != "" && err == nil {
		if err = s.deadLetterMsg(ctx, m, md, "0", tooLargeReason("message", size, s.tupleSetting, s.maxTuple)); err == nil {
			s.count("oversized")
			return
		}
	}
	var dlErr error
	if s.dlq != "" {
		dlErr = err
	}
	m.Nak()
	s.failed = &recordTooLargeError{Component: s.comp, Spout: s.what(), Source: src,
		What: "message", Size: size, Setting: s.tupleSetting, Limit: s.maxTuple, DeadLetter: dlErr}
}

// NoteFailures records how the trees about to be failed ended.
func (s *jsSpout) NoteFailures(fs []plugin.Failure) {
	for _, f := range fs {
		s.why[f.MsgID] = failureText(f)
	}
}

// deadLetter publishes a given-up message to the dead-letter subject with
// headers naming its source, then terminates it (no more redelivery).
func (s *jsSpout) deadLetter(ctx context.Context, m jetstream.Msg, md *jetstream.MsgMetadata, why string) error {
	if why == "" {
		why = "failed"
	}
	return s.deadLetterMsg(ctx, m, md, strconv.FormatUint(md.NumDelivered, 10), fmt.Sprintf("%d deliveries; last: %s", md.NumDelivered, why))
}

// deadLetterMsg publishes m to the dead-letter subject with headers naming
// its source, failures and error, then terminates it.
func (s *jsSpout) deadLetterMsg(ctx context.Context, m jetstream.Msg, md *jetstream.MsgMetadata, failures, errText string) error {
	dl := nats.NewMsg(s.dlq)
	dl.Data = m.Data()
	for k, vs := range m.Headers() {
		dl.Header[k] = vs
	}
	dl.Header.Set("Ardea-Topology", s.topology)
	dl.Header.Set("Ardea-Component", s.comp)
	dl.Header.Set("Ardea-Subject", m.Subject())
	dl.Header.Set("Ardea-Source", fmt.Sprintf("%s/%d", md.Stream, md.Sequence.Stream))
	dl.Header.Set("Ardea-Failures", failures)
	dl.Header.Set("Ardea-Error", errText)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := s.js.PublishMsg(ctx, dl); err != nil {
		s.count("dead_letter_errors")
		return s.errorf("dead letter to %s (is it captured by a stream?): %w", s.dlq, err)
	}
	if err := m.Term(); err != nil {
		return s.errorf("term: %w", err)
	}
	s.count("dead_letters")
	return nil
}

func (s *jsSpout) Activate(ctx context.Context) error   { return nil }
func (s *jsSpout) Deactivate(ctx context.Context) error { return nil }

// Close leaves unacked messages to JetStream's redelivery.
func (s *jsSpout) Close(ctx context.Context) error {
	if s.nc != nil {
		s.nc.Close()
		s.nc = nil
	}
	return nil
}

type jsSink struct {
	url, subject string
	// tenant: a tenant stream's sink (tenantstream.go), on the container's
	// own connection; name is the stream's name as the tenant knows it.
	tenant  bool
	name    string
	timeout time.Duration

	comp    string
	nc      *nats.Conn
	js      jetstream.JetStream
	keys    [][][]byte
	vals    []tuple.Value
	line    []byte
	ids     []uint64
	futures []jetstream.PubAckFuture
}

func newJetStreamSink(cfg plugin.Config) (plugin.Bolt, error) {
	r := cfg.Reader()
	s := &jsSink{url: r.String("url"), subject: r.String("subject"), timeout: r.Duration("timeout")}
	if err := r.Err(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *jsSink) errorf(format string, args ...any) error {
	if s.tenant {
		return fmt.Errorf("component %q: stream sink (stream %s): %w", s.comp, s.name, fmt.Errorf(format, args...))
	}
	return fmt.Errorf("component %q: jetstream sink (subject %s): %w", s.comp, s.subject, fmt.Errorf(format, args...))
}

func (s *jsSink) Prepare(ctx context.Context, tc plugin.TaskContext, _ plugin.Collector) error {
	s.comp = tc.Component
	var err error
	if s.tenant {
		if s.js, err = busJetStream(tc); err != nil {
			return s.errorf("%w", err)
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if _, err := openTenantStream(cctx, s.js, s.name); err != nil {
			return s.errorf("%w", err)
		}
	} else {
		s.nc, err = nats.Connect(s.url, nats.Name("ardea "+tc.Topology+"/"+tc.Component))
		if err != nil {
			return s.errorf("connect %s: %w", s.url, err)
		}
		if s.js, err = jetstream.New(s.nc); err != nil {
			return s.errorf("%w", err)
		}
	}
	s.keys = make([][][]byte, len(tc.Inputs))
	for i, in := range tc.Inputs {
		for _, name := range in.Fields {
			s.keys[i] = append(s.keys[i], append(appendJSONString(nil, []byte(name)), ':'))
		}
	}
	return nil
}

func (s *jsSink) Execute(ctx context.Context, batch []byte, out plugin.Collector) error {
	r, err := tuple.NewBatchReader(batch)
	if err != nil {
		return s.errorf("%w", err)
	}
	s.ids, s.futures = s.ids[:0], s.futures[:0]
	for i := 0; ; i++ {
		rec, ok, err := r.Next()
		if err != nil {
			return s.errorf("%w", err)
		}
		if !ok {
			break
		}
		if s.vals, _, err = tuple.DecodeValues(s.vals[:0], rec.Values); err != nil {
			return s.errorf("record %d: %w", i, err)
		}
		if int(rec.Input) >= len(s.keys) {
			return s.errorf("record %d: input index %d, but the task has %d inputs", i, rec.Input, len(s.keys))
		}
		s.line = appendJSONObject(s.line[:0], s.keys[rec.Input], s.vals)
		f, err := s.js.PublishAsync(s.subject, s.line)
		if err != nil {
			out.Fail(rec.TupleID)
			continue
		}
		s.ids, s.futures = append(s.ids, rec.TupleID), append(s.futures, f)
	}
	// Ack each tuple once JetStream stored its message; fail it otherwise.
	timer := time.NewTimer(s.timeout)
	defer timer.Stop()
	for i, f := range s.futures {
		select {
		case <-f.Ok():
			out.Ack(s.ids[i])
		case <-f.Err():
			out.Fail(s.ids[i])
		case <-timer.C:
			for _, id := range s.ids[i:] {
				out.Fail(id)
			}
			return nil
		}
	}
	return nil
}

func (s *jsSink) Tick(context.Context, plugin.Collector) error   { return nil }
func (s *jsSink) Finish(context.Context, plugin.Collector) error { return nil }

func (s *jsSink) Close(ctx context.Context) error {
	if s.tenant && s.js != nil {
		// The container's connection stays: drop this sink's reply
		// subscription and pending acks from it.
		s.js.CleanupPublisher()
		s.js = nil
	}
	if s.nc != nil {
		s.nc.Close()
		s.nc = nil
	}
	return nil
}
