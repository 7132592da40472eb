package connectors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// The pulsar spout subscribes to Pulsar topics (pulsar-client-go). Each
// message becomes a tuple (value, key, topic, message_id, publish_time,
// properties). At most once a message is acked as it is emitted; at least
// once when its tuple tree completes, and a failed tree nacks it (Pulsar
// redelivers it after nack_delay; with max_retries Pulsar's dead-letter
// policy moves a message delivered that many times to dead_letter_topic).
// A Shared or Key_Shared subscription spreads messages over the spout's
// tasks; Failover and Exclusive keep one reader at a time.
//
// The pulsar sink sends every tuple as a message (key from key_field,
// value from value_field or a JSON object of every field) and acks the
// tuple once Pulsar stored it.

func init() {
	register(plugin.RegisterSpout(plugin.Spec{
		Name:    "pulsar",
		Summary: "Subscribes to Apache Pulsar topics; acks on tuple-tree completion (at least once), nacks on failure, dead-letter topic after max_retries.",
		Fields: []plugin.Field{
			{Name: "url", Type: plugin.TypeString, Reach: plugin.ReachURL, Required: true, Doc: "service URL (pulsar://host:6650)"},
			{Name: "topics", Type: plugin.TypeString, Required: true, Doc: "comma-separated topics, or a regular expression with topics_pattern"},
			{Name: "topics_pattern", Type: plugin.TypeBool, Default: "false", Doc: "topics is a regular expression (persistent://tenant/ns/<regex>)"},
			{Name: "subscription", Type: plugin.TypeString, Default: "", Doc: "subscription name; empty: ardea-<topology>-<component>"},
			{Name: "type", Type: plugin.TypeEnum, Enum: []string{"shared", "key_shared", "failover", "exclusive"}, Default: "shared", Doc: "subscription type"},
			{Name: "start", Type: plugin.TypeEnum, Enum: []string{"latest", "earliest"}, Default: "earliest", Doc: "where a new subscription starts"},
			{Name: "nack_delay", Type: plugin.TypeDuration, Default: "1s", Min: "1ms", Doc: "how long Pulsar waits before redelivering a nacked message"},
			{Name: "max_retries", Type: plugin.TypeInt, Default: "0", Min: "0", Doc: "at least once: a message delivered this many times goes to dead_letter_topic; 0 = redeliver forever"},
			{Name: "dead_letter_topic", Type: plugin.TypeString, Default: "", Doc: "topic that receives messages given up after max_retries; required with max_retries"},
		},
		Outputs: map[string][]string{"default": pulsarFields},
	}, newPulsarSpout))
	register(plugin.RegisterBolt(plugin.Spec{
		Name:    "pulsar",
		Summary: "Sends tuples to an Apache Pulsar topic; acks each tuple once Pulsar stored its message.",
		Fields: []plugin.Field{
			{Name: "url", Type: plugin.TypeString, Reach: plugin.ReachURL, Required: true, Doc: "service URL (pulsar://host:6650)"},
			{Name: "topic", Type: plugin.TypeString, Required: true, Doc: "topic to send to"},
			{Name: "key_field", Type: plugin.TypeString, Default: "", Doc: "input field used as the message key; empty: none"},
			{Name: "value_field", Type: plugin.TypeString, Default: "", Doc: "input field used as the payload; empty: a JSON object of every field"},
			{Name: "timeout", Type: plugin.TypeDuration, Default: "30s", Min: "1ms", Doc: "how long a batch waits for Pulsar"},
		},
	}, newPulsarSink))
}

var pulsarFields = []string{"value", "key", "topic", "message_id", "publish_time", "properties"}

var pulsarTypes = map[string]pulsar.SubscriptionType{"shared": pulsar.Shared, "key_shared": pulsar.KeyShared,
	"failover": pulsar.Failover, "exclusive": pulsar.Exclusive}

type pulsarSpout struct {
	url, topics, sub, subType, start, dlq string
	pattern                               bool
	nackDelay                             time.Duration
	maxRetries                            int

	comp    string
	stream0 uint16
	client  pulsar.Client
	cons    pulsar.Consumer
	acking  bool
	next    uint64
	pending map[uint64]pulsar.Message
	metric  func(string, int64)
	vals    []byte
	props   []byte

	maxTuple     int64 // the tuple limit, and the setting it comes from
	tupleSetting string
	dlqProd      pulsar.Producer // oversized messages to dead_letter_topic
	// failed: a message over the tuple limit without a dead-letter topic
	// ended the input; Next reports it once nothing is pending.
	failed error
}

func newPulsarSpout(cfg plugin.Config) (plugin.Spout, error) {
	r := cfg.Reader()
	s := &pulsarSpout{url: r.String("url"), topics: r.String("topics"), pattern: r.Bool("topics_pattern"),
		sub: r.String("subscription"), subType: r.String("type"), start: r.String("start"),
		nackDelay: r.Duration("nack_delay"), maxRetries: int(r.Int("max_retries")), dlq: r.String("dead_letter_topic")}
	s.maxTuple, s.tupleSetting = r.TupleLimit()
	if err := r.Err(); err != nil {
		return nil, err
	}
	if len(splitList(s.topics)) == 0 {
		return nil, errors.New(`config "topics": no topic`)
	}
	if s.maxRetries > 0 && s.dlq == "" {
		return nil, errors.New(`config "max_retries": needs "dead_letter_topic", the topic that receives the messages given up`)
	}
	return s, nil
}

func (s *pulsarSpout) errorf(format string, args ...any) error {
	return fmt.Errorf("component %q: pulsar spout (topics %s): %w", s.comp, s.topics, fmt.Errorf(format, args...))
}

// pulsarClient connects quietly (pulsar-client-go logs through logrus by
// default; its messages go to the task's logger instead).
func pulsarClient(url string, log *slog.Logger) (pulsar.Client, error) {
	opts := pulsar.ClientOptions{URL: url, OperationTimeout: 30 * time.Second, ConnectionTimeout: 10 * time.Second}
	if log != nil {
		opts.Logger = plog.NewLoggerWithSlog(log)
	}
	return pulsar.NewClient(opts)
}

func (s *pulsarSpout) Open(ctx context.Context, tc plugin.TaskContext, _ plugin.Collector) error {
	s.comp = tc.Component
	st, err := outputStream(tc, "pulsar spout", "default", len(pulsarFields))
	if err != nil {
		return err
	}
	s.stream0 = st
	s.metric = tc.Metric
	if s.metric == nil {
		s.metric = func(string, int64) {}
	}
	if s.sub == "" {
		s.sub = "ardea-" + tc.Topology + "-" + tc.Component
	}
	if s.client, err = pulsarClient(s.url, tc.Logger); err != nil {
		return s.errorf("connect %s: %w", s.url, err)
	}
	opts := pulsar.ConsumerOptions{SubscriptionName: s.sub, Type: pulsarTypes[s.subType],
		NackRedeliveryDelay: s.nackDelay, ReceiverQueueSize: 1000,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest}
	if s.start == "latest" {
		opts.SubscriptionInitialPosition = pulsar.SubscriptionPositionLatest
	}
	if s.pattern {
		opts.TopicsPattern = s.topics
	} else {
		opts.Topics = splitList(s.topics)
	}
	if s.maxRetries > 0 {
		opts.DLQ = &pulsar.DLQPolicy{MaxDeliveries: uint32(s.maxRetries), DeadLetterTopic: s.dlq}
	}
	if s.cons, err = s.client.Subscribe(opts); err != nil {
		s.client.Close()
		s.client = nil
		return s.errorf("subscribe %s: %w", s.sub, err)
	}
	s.acking = tc.Acking
	s.pending = map[uint64]pulsar.Message{}
	return nil
}

func (s *pulsarSpout) Next(ctx context.Context, max int, out plugin.Collector) (plugin.Status, error) {
	if s.failed != nil {
		if len(s.pending) == 0 {
			return plugin.Done, s.failed
		}
		return plugin.Idle, nil
	}
	n := 0
	for n < max && s.failed == nil {
		var cm pulsar.ConsumerMessage
		select {
		case cm = <-s.cons.Chan():
		default:
			if n == 0 {
				return plugin.Idle, nil
			}
			return plugin.Emitted, nil
		}
		m := cm.Message
		s.props = s.props[:0]
		if p := m.Properties(); len(p) > 0 {
			s.props = append(s.props, '{')
			for i, k := range slices.Sorted(maps.Keys(p)) {
				if i > 0 {
					s.props = append(s.props, ',')
				}
				s.props = append(appendJSONString(s.props, []byte(k)), ':')
				s.props = appendJSONString(s.props, []byte(p[k]))
			}
			s.props = append(s.props, '}')
		}
		s.vals = tuple.AppendValues(s.vals[:0], tuple.Str(string(m.Payload())), tuple.Str(m.Key()), tuple.Str(m.Topic()),
			tuple.Str(m.ID().String()), tuple.Int(m.PublishTime().UnixMilli()), tuple.Str(string(s.props)))
		if size := int64(len(s.vals)); size > s.maxTuple {
			if err := s.oversized(ctx, m, size); err != nil {
				return plugin.Emitted, err
			}
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
			if err := s.cons.Ack(m); err != nil {
				return plugin.Emitted, s.errorf("ack: %w", err)
			}
		}
		s.metric("pulsar_messages", 1)
		n++
	}
	if n == 0 {
		return plugin.Idle, nil
	}
	return plugin.Emitted, nil
}

// oversized handles m, whose tuple exceeds the tuple limit: sent to
// dead_letter_topic (with the properties Pulsar's own dead letters carry,
// REAL_TOPIC and ORIGIN_MESSAGE_ID, and ardea-error) and acked if there is
// one, else (or if that failed) left unacked for redelivery, and s.failed
// ends the input.
func (s *pulsarSpout) oversized(ctx context.Context, m pulsar.Message, size int64) error {
	reason := tooLargeReason("message", size, s.tupleSetting, s.maxTuple)
	var dlErr error
	if s.dlq != "" {
		if dlErr = s.deadLetter(ctx, m, reason); dlErr == nil {
			s.metric("pulsar_oversized", 1)
			if err := s.cons.Ack(m); err != nil {
				return s.errorf("ack: %w", err)
			}
			return nil
		}
	}
	s.failed = &recordTooLargeError{Component: s.comp, Spout: fmt.Sprintf("pulsar spout (topics %s)", s.topics),
		Source: m.Topic() + " " + m.ID().String(), What: "message", Size: size, Setting: s.tupleSetting, Limit: s.maxTuple, DeadLetter: dlErr}
	return nil
}

func (s *pulsarSpout) deadLetter(ctx context.Context, m pulsar.Message, reason string) error {
	if s.dlqProd == nil {
		p, err := s.client.CreateProducer(pulsar.ProducerOptions{Topic: s.dlq})
		if err != nil {
			return s.errorf("dead letter producer %s: %w", s.dlq, err)
		}
		s.dlqProd = p
	}
	props := maps.Clone(m.Properties())
	if props == nil {
		props = map[string]string{}
	}
	props["REAL_TOPIC"], props["ORIGIN_MESSAGE_ID"], props["ardea-error"] = m.Topic(), m.ID().String(), reason
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := s.dlqProd.Send(ctx, &pulsar.ProducerMessage{Payload: m.Payload(), Key: m.Key(), Properties: props}); err != nil {
		return s.errorf("dead letter to %s: %w", s.dlq, err)
	}
	return nil
}

// Ack acknowledges the messages of completed trees.
func (s *pulsarSpout) Ack(ctx context.Context, ids []uint64, _ plugin.Collector) error {
	for _, id := range ids {
		if m := s.pending[id]; m != nil {
			delete(s.pending, id)
			if err := s.cons.Ack(m); err != nil {
				return s.errorf("ack: %w", err)
			}
		}
	}
	return nil
}

// Fail nacks them: Pulsar redelivers them after nack_delay (to any task
// of a shared subscription), or moves them to the dead-letter topic.
func (s *pulsarSpout) Fail(ctx context.Context, ids []uint64, _ plugin.Collector) error {
	for _, id := range ids {
		if m := s.pending[id]; m != nil {
			delete(s.pending, id)
			s.cons.Nack(m)
			s.metric("pulsar_nacked", 1)
		}
	}
	return nil
}

func (s *pulsarSpout) Activate(ctx context.Context) error   { return nil }
func (s *pulsarSpout) Deactivate(ctx context.Context) error { return nil }

// Close leaves unacked messages to Pulsar's redelivery.
func (s *pulsarSpout) Close(ctx context.Context) error {
	if s.dlqProd != nil {
		s.dlqProd.Close()
		s.dlqProd = nil
	}
	if s.cons != nil {
		s.cons.Close()
		s.cons = nil
	}
	if s.client != nil {
		s.client.Close()
		s.client = nil
	}
	return nil
}

type pulsarSink struct {
	url, topic, keyField, valueField string
	timeout                          time.Duration

	comp     string
	client   pulsar.Client
	prod     pulsar.Producer
	keys     [][][]byte
	keyIdx   []int
	valueIdx []int
	vals     []tuple.Value
	metric   func(string, int64)
}

func newPulsarSink(cfg plugin.Config) (plugin.Bolt, error) {
	r := cfg.Reader()
	s := &pulsarSink{url: r.String("url"), topic: r.String("topic"), keyField: r.String("key_field"),
		valueField: r.String("value_field"), timeout: r.Duration("timeout")}
	if err := r.Err(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *pulsarSink) errorf(format string, args ...any) error {
	return fmt.Errorf("component %q: pulsar sink (topic %s): %w", s.comp, s.topic, fmt.Errorf(format, args...))
}

func (s *pulsarSink) Prepare(ctx context.Context, tc plugin.TaskContext, _ plugin.Collector) error {
	s.comp = tc.Component
	s.metric = tc.Metric
	if s.metric == nil {
		s.metric = func(string, int64) {}
	}
	for _, in := range tc.Inputs {
		var ks [][]byte
		for _, name := range in.Fields {
			ks = append(ks, append(appendJSONString(nil, []byte(name)), ':'))
		}
		s.keys = append(s.keys, ks)
		ki, vi := -1, -1
		for _, f := range []struct {
			cfg, name string
			idx       *int
		}{{"key_field", s.keyField, &ki}, {"value_field", s.valueField, &vi}} {
			if f.name == "" {
				continue
			}
			if *f.idx = slices.Index(in.Fields, f.name); *f.idx < 0 {
				return fmt.Errorf("component %q: pulsar sink: config %q: input from %q has no field %q (fields %v)", s.comp, f.cfg, in.Component, f.name, in.Fields)
			}
		}
		s.keyIdx, s.valueIdx = append(s.keyIdx, ki), append(s.valueIdx, vi)
	}
	var err error
	if s.client, err = pulsarClient(s.url, tc.Logger); err != nil {
		return s.errorf("connect %s: %w", s.url, err)
	}
	if s.prod, err = s.client.CreateProducer(pulsar.ProducerOptions{Topic: s.topic, SendTimeout: s.timeout}); err != nil {
		s.client.Close()
		s.client = nil
		return s.errorf("producer: %w", err)
	}
	return nil
}

func (s *pulsarSink) Execute(ctx context.Context, batch []byte, out plugin.Collector) error {
	r, err := tuple.NewBatchReader(batch)
	if err != nil {
		return s.errorf("%w", err)
	}
	sends := newBatchSends(r.Count())
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
		in := int(rec.Input)
		if in >= len(s.keys) {
			return s.errorf("record %d: input index %d, but the task has %d inputs", i, rec.Input, len(s.keys))
		}
		msg := &pulsar.ProducerMessage{}
		good := true
		if k := s.keyIdx[in]; k >= 0 {
			var kb []byte
			kb, good = fieldBytes(s.vals, k)
			msg.Key = string(kb)
		}
		if v := s.valueIdx[in]; v < 0 {
			msg.Payload = appendJSONObject(nil, s.keys[in], s.vals)
		} else if good {
			msg.Payload, good = fieldBytes(s.vals, v)
		}
		if !good {
			s.metric("pulsar_bad_records", 1)
			out.Fail(rec.TupleID)
			continue
		}
		n := sends.add(rec.TupleID)
		s.prod.SendAsync(ctx, msg, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { sends.done(n, err) })
	}
	if len(sends.ids) == 0 {
		return nil
	}
	if err := s.prod.Flush(); err != nil {
		s.metric("pulsar_send_errors", 1)
	}
	stored, failed, timedOut := sends.await(out, s.timeout+time.Second) // SendTimeout fails each send first
	s.metric("pulsar_messages", int64(stored))
	s.metric("pulsar_send_errors", int64(failed+timedOut))
	return nil
}

func (s *pulsarSink) Tick(context.Context, plugin.Collector) error   { return nil }
func (s *pulsarSink) Finish(context.Context, plugin.Collector) error { return nil }

func (s *pulsarSink) Close(ctx context.Context) error {
	if s.prod != nil {
		s.prod.Close()
		s.prod = nil
	}
	if s.client != nil {
		s.client.Close()
		s.client = nil
	}
	return nil
}
