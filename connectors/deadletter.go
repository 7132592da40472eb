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
	"syscall"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	ardea "github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/scheduler/api"
)

// Dead letters: records a spout gave up on after max_retries failed tuple
// trees, kept where the spout's config says (a file for builtin:file, a
// topic for builtin:kafka and builtin:pulsar, a subject for
// builtin:jetstream). The spouts write them; the dead-letter destinations
// registered here under the spouts' names list those not yet replayed and
// replay them: send them back to the spout's source, where the running
// topology reads them again, and mark them replayed (Kafka by the
// committed offset of group "<group>-dlq" on the dead-letter topic,
// Pulsar by acking them on subscription "ardea-dlq", JetStream by acking
// them on durable consumer "ardea-dlq-<hash of the subject>", a file by
// emptying it).

func init() {
	register(plugin.RegisterDeadLetter(plugin.Spec{
		Name:    "file",
		Summary: "The dead-letter file of builtin:file: one JSON object per line (line number, topology, component, failures, error, value). Replay appends the values to the input file (a spout still reading it picks them up at its end) and empties the dead-letter file.",
		Fields: []plugin.Field{
			{Name: "path", Type: plugin.TypePath, Required: true, Doc: "the spout's input file, where replayed lines are appended"},
			{Name: "dead_letter", Type: plugin.TypePath, Doc: "the dead-letter file; unset: the spout keeps no dead letters"},
		},
	}, newFileDeadLetters))
	register(plugin.RegisterDeadLetter(plugin.Spec{
		Name:    "kafka",
		Summary: "The dead-letter topic of builtin:kafka, headers ardea-source (topic/partition/offset), ardea-failures and ardea-error. Listing reads it from the offsets group <group>-dlq committed; replay produces each record to its source topic and commits the topic's end for that group.",
		Fields: []plugin.Field{
			{Name: "brokers", Type: plugin.TypeString, Reach: plugin.ReachBrokers, Required: true, Doc: "comma-separated seed brokers (host:port)"},
			{Name: "group", Type: plugin.TypeString, Doc: "the spout's consumer group; replays are tracked by group <group>-dlq; empty: ardea-<topology>-<component>"},
			{Name: "dead_letter_topic", Type: plugin.TypeString, Doc: "the dead-letter topic; unset: the spout keeps no dead letters"},
		},
	}, newKafkaDeadLetters))
	register(plugin.RegisterDeadLetter(plugin.Spec{
		Name:    "pulsar",
		Summary: "The dead-letter topic of builtin:pulsar (Pulsar's dead-letter policy: properties REAL_TOPIC and ORIGIN_MESSAGE_ID; oversized messages with ardea-error), read on subscription ardea-dlq. Replay sends each message to REAL_TOPIC and acks it.",
		Fields: []plugin.Field{
			{Name: "url", Type: plugin.TypeString, Reach: plugin.ReachURL, Required: true, Doc: "service URL (pulsar://host:6650)"},
			{Name: "max_retries", Type: plugin.TypeInt, Default: "0", Min: "0", Doc: "deliveries before a message became a dead letter (reported as its failures)"},
			{Name: "dead_letter_topic", Type: plugin.TypeString, Doc: "the dead-letter topic; unset: the spout keeps no dead letters"},
		},
	}, newPulsarDeadLetters))
	register(plugin.RegisterDeadLetter(plugin.Spec{
		Name:    "jetstream",
		Summary: "The dead-letter subject of builtin:jetstream (headers Ardea-Subject, Ardea-Source, Ardea-Failures, Ardea-Error), read from the stream that captures it after the ack floor of durable consumer ardea-dlq-<hash>. Replay publishes each message to its Ardea-Subject and acks it on that consumer.",
		Fields: []plugin.Field{
			{Name: "url", Type: plugin.TypeString, Reach: plugin.ReachURL, Required: true, Doc: "NATS server URL"},
			{Name: "dead_letter_subject", Type: plugin.TypeString, Doc: "the dead-letter subject; unset: the spout keeps no dead letters"},
		},
	}, newJetStreamDeadLetters))
}

// ErrNoDeadLetters is returned (wrapped) for a component that keeps no
// dead letters.
var ErrNoDeadLetters = plugin.ErrNoDeadLetters

// deadLetters lists the dead letters of one spout (module builtin:<name>
// with config cfg; relative paths already resolved) not yet replayed.
// topology names the defaults (the Kafka group).
func deadLetters(ctx context.Context, topology, component, module string, cfg map[string]string) ([]api.DeadLetter, error) {
	return DeadLettersIn(ctx, nil, topology, component, module, cfg, false)
}

// replayDeadLetters sends the spout's dead letters back to its source and
// returns them.
func replayDeadLetters(ctx context.Context, topology, component, module string, cfg map[string]string) ([]api.DeadLetter, error) {
	return DeadLettersIn(ctx, nil, topology, component, module, cfg, true)
}

// DeadLettersIn is deadLetters (replay: replayDeadLetters) with the
// dead-letter destinations of e (nil: the default environment).
func DeadLettersIn(ctx context.Context, e *plugin.Environment, topology, component, module string, cfg map[string]string, replay bool) ([]api.DeadLetter, error) {
	name, ok := strings.CutPrefix(module, ardea.BuiltinPrefix)
	if !ok {
		return nil, fmt.Errorf("component %q: %w (dead letters are kept by built-in spouts)", component, ErrNoDeadLetters)
	}
	e, err := Environment(e)
	if err != nil {
		return nil, err
	}
	st, err := e.NewDeadLetterStore(name, plugin.DeadLetterOwner{Topology: topology, Component: component}, cfg)
	if err != nil {
		if ce := (*plugin.ConfigError)(nil); errors.As(err, &ce) && ce.Component == component {
			return nil, err // names the component already
		}
		return nil, fmt.Errorf("component %q: %w", component, err)
	}
	var dl []api.DeadLetter
	if replay {
		dl, err = st.Replay(ctx)
	} else {
		dl, err = st.List(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("component %q (%s): dead letters: %w", component, module, err)
	}
	return dl, nil
}

// deadLetterStore is a store from one function (replay: send them back).
type deadLetterStore func(ctx context.Context, replay bool) ([]api.DeadLetter, error)

func (f deadLetterStore) List(ctx context.Context) ([]api.DeadLetter, error)   { return f(ctx, false) }
func (f deadLetterStore) Replay(ctx context.Context) ([]api.DeadLetter, error) { return f(ctx, true) }

// noDestination is the error of a spout config without a destination.
func noDestination(field string) error {
	return fmt.Errorf("config %q unset: %w", field, ErrNoDeadLetters)
}

func newFileDeadLetters(cfg plugin.Config, owner plugin.DeadLetterOwner) (plugin.DeadLetterStore, error) {
	r := cfg.Reader()
	path, dead := r.String("path"), r.String("dead_letter")
	if err := r.Err(); err != nil {
		return nil, err
	}
	if dead == "" {
		return nil, noDestination("dead_letter")
	}
	return deadLetterStore(func(_ context.Context, replay bool) ([]api.DeadLetter, error) {
		return fileDeadLetters(owner.Component, path, dead, replay)
	}), nil
}

func newKafkaDeadLetters(cfg plugin.Config, owner plugin.DeadLetterOwner) (plugin.DeadLetterStore, error) {
	r := cfg.Reader()
	brokers, group, topic := r.String("brokers"), r.String("group"), r.String("dead_letter_topic")
	if err := r.Err(); err != nil {
		return nil, err
	}
	if topic == "" {
		return nil, noDestination("dead_letter_topic")
	}
	if group == "" {
		group = "ardea-" + owner.Topology + "-" + owner.Component
	}
	return deadLetterStore(func(ctx context.Context, replay bool) ([]api.DeadLetter, error) {
		return kafkaDeadLetters(ctx, owner.Component, brokers, group+"-dlq", topic, replay)
	}), nil
}

func newPulsarDeadLetters(cfg plugin.Config, owner plugin.DeadLetterOwner) (plugin.DeadLetterStore, error) {
	r := cfg.Reader()
	url, topic, failures := r.String("url"), r.String("dead_letter_topic"), int(r.Int("max_retries"))
	if err := r.Err(); err != nil {
		return nil, err
	}
	if topic == "" {
		return nil, noDestination("dead_letter_topic")
	}
	return deadLetterStore(func(ctx context.Context, replay bool) ([]api.DeadLetter, error) {
		return pulsarDeadLetters(ctx, owner.Component, url, topic, failures, replay)
	}), nil
}

func newJetStreamDeadLetters(cfg plugin.Config, owner plugin.DeadLetterOwner) (plugin.DeadLetterStore, error) {
	r := cfg.Reader()
	url, subj := r.String("url"), r.String("dead_letter_subject")
	if err := r.Err(); err != nil {
		return nil, err
	}
	if subj == "" {
		return nil, noDestination("dead_letter_subject")
	}
	return deadLetterStore(func(ctx context.Context, replay bool) ([]api.DeadLetter, error) {
		return jetStreamDeadLetters(ctx, owner.Component, url, subj, replay)
	}), nil
}

// fileDeadLetters reads the dead-letter file (a JSON object per line).
// Replaying appends the lines to the spout's input file (a spout reading
// it still running picks them up at the end) and empties the dead-letter
// file.
func fileDeadLetters(component, input, path string, replay bool) ([]api.DeadLetter, error) {
	// Never blocking (a FIFO is refused, not waited on), and bounded.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() || fi.Size() > plugin.MaxDeadLetterFileBytes {
		return nil, fmt.Errorf("dead-letter file %s: want a regular file of at most %d bytes (plugin.MaxDeadLetterFileBytes), it is %s of %d bytes",
			path, plugin.MaxDeadLetterFileBytes, fi.Mode().Type(), fi.Size())
	}
	var out []api.DeadLetter
	// Lines of any length: an oversized line's dead letter holds all of it.
	r := bufio.NewReaderSize(io.LimitReader(f, plugin.MaxDeadLetterFileBytes), 64<<10)
	for n := 1; ; n++ {
		b, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(b)) > 0 {
			var d fileDeadLetter
			if err := json.Unmarshal(b, &d); err != nil {
				return nil, fmt.Errorf("%s:%d: not a dead letter: %w", path, n, err)
			}
			out = append(out, api.DeadLetter{Component: component, Destination: "file:" + path, Source: input + ":" + strconv.FormatUint(d.Line, 10),
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
	in, err := os.OpenFile(input, os.O_WRONLY|os.O_APPEND, 0)
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

// kafkaDeadLetters reads topic from the offsets group committed; replaying
// produces each record to its source topic and commits the topic's end.
func kafkaDeadLetters(ctx context.Context, component, brokers, group, topic string, replay bool) ([]api.DeadLetter, error) {
	// Dead letters are produced outside transactions: offsets are dense.
	cl, err := kgo.NewClient(kgo.SeedBrokers(splitList(brokers)...))
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
	var out []api.DeadLetter
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
			d := api.DeadLetter{Component: component, Destination: "kafka:" + topic, Value: string(r.Value)}
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
func pulsarDeadLetters(ctx context.Context, component, url, topic string, failures int, replay bool) ([]api.DeadLetter, error) {
	client, err := pulsarClient(url, slog.New(slog.DiscardHandler))
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
	var out []api.DeadLetter
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
		d := api.DeadLetter{Component: component, Destination: "pulsar:" + topic, Value: string(m.Payload()),
			Source: props["REAL_TOPIC"] + " " + props["ORIGIN_MESSAGE_ID"], Failures: failures}
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
func jetStreamDeadLetters(ctx context.Context, component, url, subj string, replay bool) ([]api.DeadLetter, error) {
	nc, err := nats.Connect(url, nats.Name("ardea dlq"))
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
	letter := func(m jetstream.Msg) api.DeadLetter {
		hd := m.Headers()
		n, _ := strconv.Atoi(hd.Get("Ardea-Failures"))
		return api.DeadLetter{Component: component, Destination: "jetstream:" + subj, Source: hd.Get("Ardea-Subject") + " " + hd.Get("Ardea-Source"),
			Failures: n, Error: hd.Get("Ardea-Error"), Value: string(m.Data())}
	}
	var out []api.DeadLetter
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
