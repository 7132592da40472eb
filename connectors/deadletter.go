package connectors

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Dead letters: records a spout gave up on after max_retries failed tuple
// trees, kept where the spout's config says (a file for builtin:file, a
// topic for builtin:kafka and builtin:pulsar, a subject for
// builtin:jetstream). DeadLetters lists those not
// yet replayed; ReplayDeadLetters sends them back to the spout's source,
// where the running topology reads them again, and marks them replayed:
// Kafka by the committed offset of group "<group>-dlq" on the dead-letter
// topic, Pulsar by acking them on subscription "ardea-dlq", JetStream by
// acking them on durable consumer "ardea-dlq-<hash of the subject>".

// DeadLetter is one given-up record.
type DeadLetter struct {
	Component   string `json:"component"`
	Destination string `json:"destination"` // file:<path>, kafka:<topic>, pulsar:<topic>, jetstream:<subject>
	Source      string `json:"source"`      // where it was read: line number, topic/partition/offset, message id
	Failures    int    `json:"failures,omitempty"`
	Error       string `json:"error,omitempty"`
	Value       string `json:"value"`
}

// ErrNoDeadLetters is returned for a component that keeps no dead letters.
var ErrNoDeadLetters = errors.New("keeps no dead letters")

// DeadLetters lists the dead letters of one spout (module builtin:<name>
// with config cfg; relative paths already resolved) not yet replayed.
// topology names the defaults (the Kafka group).
func DeadLetters(ctx context.Context, topology, component, module string, cfg map[string]string) ([]DeadLetter, error) {
	return deadLetters(ctx, topology, component, module, cfg, false)
}

// ReplayDeadLetters sends the spout's dead letters back to its source and
// returns them.
func ReplayDeadLetters(ctx context.Context, topology, component, module string, cfg map[string]string) ([]DeadLetter, error) {
	return deadLetters(ctx, topology, component, module, cfg, true)
}

func deadLetters(ctx context.Context, topology, component, module string, cfg map[string]string, replay bool) ([]DeadLetter, error) {
	name, ok := strings.CutPrefix(module, "builtin:")
	if !ok {
		return nil, fmt.Errorf("component %q: %w (dead letters are kept by built-in spouts)", component, ErrNoDeadLetters)
	}
	_, c, err := build(KindSpout, name, cfg)
	if err != nil {
		return nil, fmt.Errorf("component %q: %w", component, err)
	}
	var dl []DeadLetter
	switch name {
	case "file":
		dl, err = fileDeadLetters(component, c, replay)
	case "kafka":
		dl, err = kafkaDeadLetters(ctx, topology, component, c, replay)
	case "pulsar":
		dl, err = pulsarDeadLetters(ctx, component, c, replay)
	case "jetstream":
		dl, err = jetStreamDeadLetters(ctx, component, c, replay)
	default:
		return nil, fmt.Errorf("component %q (%s): %w", component, module, ErrNoDeadLetters)
	}
	if err != nil {
		return nil, fmt.Errorf("component %q: dead letters: %w", component, err)
	}
	return dl, nil
}

// fileDeadLetters reads the dead-letter file (a JSON object per line).
// Replaying appends the lines to the spout's input file (a spout reading
// it still running picks them up at the end) and empties the dead-letter
// file.
func fileDeadLetters(component string, c Config, replay bool) ([]DeadLetter, error) {
	path := c.String("dead_letter")
	if path == "" {
		return nil, fmt.Errorf("config %q unset: %w", "dead_letter", ErrNoDeadLetters)
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []DeadLetter
	// Lines of any length: an oversized line's dead letter holds all of it.
	r := bufio.NewReaderSize(f, 64<<10)
	for n := 1; ; n++ {
		b, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(b)) > 0 {
			var d fileDeadLetter
			if err := json.Unmarshal(b, &d); err != nil {
				return nil, fmt.Errorf("%s:%d: not a dead letter: %w", path, n, err)
			}
			out = append(out, DeadLetter{Component: component, Destination: "file:" + path, Source: c.String("path") + ":" + strconv.FormatUint(d.Line, 10),
				Failures: d.Failures, Error: d.Error, Value: d.Value})
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	if !replay || len(out) == 0 {
		return out, nil
	}
	in, err := os.OpenFile(c.String("path"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	for _, d := range out {
		b.WriteString(d.Value + "\n")
	}
	if _, err := in.WriteString(b.String()); err != nil {
		in.Close()
		return nil, err
	}
	if err := in.Close(); err != nil {
		return nil, err
	}
	return out, os.Truncate(path, 0)
}

func kafkaDeadLetters(ctx context.Context, topology, component string, c Config, replay bool) ([]DeadLetter, error) {
	topic := c.String("dead_letter_topic")
	if topic == "" {
		return nil, fmt.Errorf("config %q unset: %w", "dead_letter_topic", ErrNoDeadLetters)
	}
	group := c.String("group")
	if group == "" {
		group = "ardea-" + topology + "-" + component
	}
	group += "-dlq"
	// Dead letters are produced outside transactions: offsets are dense.
	cl, err := kgo.NewClient(kgo.SeedBrokers(splitList(c.String("brokers"))...))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		return nil, err
	}
	from := map[string]map[int32]kgo.Offset{topic: {}}
	todo := 0
	ends.Each(func(l kadm.ListedOffset) {
		start := int64(0)
		if o, ok := committed.Lookup(topic, l.Partition); ok && o.At > 0 {
			start = o.At
		}
		from[topic][l.Partition] = kgo.NewOffset().At(start)
		if l.Offset > start {
			todo++
		}
	})
	if todo == 0 {
		return nil, nil
	}
	cl.AddConsumePartitions(from)
	var out []DeadLetter
	var recs []*kgo.Record
	done := func() bool {
		n := 0
		ends.Each(func(l kadm.ListedOffset) {
			if p := from[topic][l.Partition]; p.EpochOffset().Offset >= l.Offset {
				n++
			}
		})
		return n == len(from[topic])
	}
	deadline := time.Now().Add(30 * time.Second)
	for !done() {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("topic %s: dead letters not read within 30s", topic)
		}
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		fs := cl.PollFetches(pctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			if l, ok := ends.Lookup(topic, r.Partition); ok && r.Offset >= l.Offset {
				return // produced after the listing began
			}
			from[topic][r.Partition] = kgo.NewOffset().At(r.Offset + 1)
			d := DeadLetter{Component: component, Destination: "kafka:" + topic, Value: string(r.Value)}
			for _, h := range r.Headers {
				switch h.Key {
				case "ardea-source":
					d.Source = string(h.Value)
				case "ardea-failures":
					d.Failures, _ = strconv.Atoi(string(h.Value))
				case "ardea-error":
					d.Error = string(h.Value)
				}
			}
			out, recs = append(out, d), append(recs, r)
		})
	}
	if !replay {
		return out, nil
	}
	var back []*kgo.Record
	for i, r := range recs {
		src, _, _ := strings.Cut(out[i].Source, "/")
		if src == "" {
			return nil, fmt.Errorf("dead letter %s/%d/%d has no ardea-source header", r.Topic, r.Partition, r.Offset)
		}
		back = append(back, &kgo.Record{Topic: src, Key: r.Key, Value: r.Value})
	}
	if err := cl.ProduceSync(ctx, back...).FirstErr(); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	var offs kadm.Offsets
	ends.Each(func(l kadm.ListedOffset) {
		offs.Add(kadm.Offset{Topic: topic, Partition: l.Partition, At: l.Offset, LeaderEpoch: -1})
	})
	resp, err := adm.CommitOffsets(ctx, group, offs)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("replayed, but not marked replayed (group %s): %w", group, err)
	}
	return out, nil
}

// pulsarDeadLetters reads the dead-letter topic on subscription ardea-dlq:
// listing leaves the messages there, replaying sends each to the topic it
// came from and acks it.
func pulsarDeadLetters(ctx context.Context, component string, c Config, replay bool) ([]DeadLetter, error) {
	topic := c.String("dead_letter_topic")
	if topic == "" {
		return nil, fmt.Errorf("config %q unset: %w", "dead_letter_topic", ErrNoDeadLetters)
	}
	client, err := pulsarClient(c.String("url"), slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	defer client.Close()
	cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "ardea-dlq", Type: pulsar.Exclusive,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		return nil, err
	}
	defer cons.Close()
	producers := map[string]pulsar.Producer{}
	defer func() {
		for _, p := range producers {
			p.Close()
		}
	}()
	var out []DeadLetter
	for {
		// A short wait: the topic's backlog arrives at once.
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		m, err := cons.Receive(rctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return out, nil
		}
		props := m.Properties()
		d := DeadLetter{Component: component, Destination: "pulsar:" + topic, Value: string(m.Payload()),
			Source: props["REAL_TOPIC"] + " " + props["ORIGIN_MESSAGE_ID"], Failures: int(c.Int("max_retries"))}
		if e, ok := props["ardea-error"]; ok { // an oversized message, never delivered
			d.Error, d.Failures = e, 0
		}
		out = append(out, d)
		if !replay {
			continue
		}
		src := props["REAL_TOPIC"]
		if src == "" {
			return nil, fmt.Errorf("dead letter %s has no REAL_TOPIC property", m.ID())
		}
		p := producers[src]
		if p == nil {
			if p, err = client.CreateProducer(pulsar.ProducerOptions{Topic: src}); err != nil {
				return nil, err
			}
			producers[src] = p
		}
		if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: m.Payload(), Key: m.Key()}); err != nil {
			return nil, fmt.Errorf("replay to %s: %w", src, err)
		}
		if err := cons.Ack(m); err != nil {
			return nil, err
		}
	}
}

// jetStreamDeadLetters reads the dead-letter subject from the stream that
// captures it: listing from after the ardea-dlq consumer's ack floor,
// replaying through that consumer (publish to Ardea-Subject, then ack).
func jetStreamDeadLetters(ctx context.Context, component string, c Config, replay bool) ([]DeadLetter, error) {
	subj := c.String("dead_letter_subject")
	if subj == "" {
		return nil, fmt.Errorf("config %q unset: %w", "dead_letter_subject", ErrNoDeadLetters)
	}
	nc, err := nats.Connect(c.String("url"), nats.Name("ardea dlq"))
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	stream, err := js.StreamNameBySubject(ctx, subj)
	if err != nil {
		return nil, fmt.Errorf("no stream captures %s: %w", subj, err)
	}
	h := fnv.New32a()
	h.Write([]byte(subj))
	cons, err := js.CreateOrUpdateConsumer(ctx, stream, jetstream.ConsumerConfig{Durable: fmt.Sprintf("ardea-dlq-%08x", h.Sum32()),
		FilterSubject: subj, AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute})
	if err != nil {
		return nil, err
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return nil, err
	}
	letter := func(m jetstream.Msg) DeadLetter {
		hd := m.Headers()
		n, _ := strconv.Atoi(hd.Get("Ardea-Failures"))
		return DeadLetter{Component: component, Destination: "jetstream:" + subj, Source: hd.Get("Ardea-Subject") + " " + hd.Get("Ardea-Source"),
			Failures: n, Error: hd.Get("Ardea-Error"), Value: string(m.Data())}
	}
	var out []DeadLetter
	if !replay {
		if info.NumPending == 0 {
			return nil, nil
		}
		oc, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subj},
			DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: info.AckFloor.Stream + 1})
		if err != nil {
			return nil, err
		}
		for uint64(len(out)) < info.NumPending {
			m, err := oc.Next(jetstream.FetchMaxWait(5 * time.Second))
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", subj, err)
			}
			out = append(out, letter(m))
		}
		return out, nil
	}
	for {
		batch, err := cons.FetchNoWait(256)
		if err != nil {
			return nil, err
		}
		n := 0
		for m := range batch.Messages() {
			n++
			d := letter(m)
			src := m.Headers().Get("Ardea-Subject")
			if src == "" {
				return nil, fmt.Errorf("dead letter on %s has no Ardea-Subject header", subj)
			}
			if _, err := js.Publish(ctx, src, m.Data()); err != nil {
				return nil, fmt.Errorf("replay to %s: %w", src, err)
			}
			if err := m.DoubleAck(ctx); err != nil {
				return nil, err
			}
			out = append(out, d)
		}
		if n == 0 {
			return out, nil
		}
	}
}
