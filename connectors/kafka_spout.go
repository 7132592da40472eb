package connectors

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// The kafka spout reads Kafka topics with franz-go. Each record becomes a
// tuple (value, key, topic, partition, offset, timestamp, headers).
//
// Positions: for each partition the spout keeps the offset to resume
// from, the first one not yet fully processed: at most once the offset
// after the last record emitted; at least once the oldest record whose
// tuple tree has not completed; effectively once the offset after the
// last record emitted before the checkpoint barrier. It commits them to
// the consumer group (at most and at least once every commit_interval;
// effectively once when the checkpoint that holds them becomes global),
// so an offset is committed only once everything before it was processed.
//
// Assignment: assign=group joins the consumer group and lets Kafka spread
// partitions over the spout's tasks (a rebalance drops the revoked
// partitions' in-flight records: their new owner reads them again from
// the committed offset, so nothing is lost). assign=partitions spreads the
// partitions over the tasks itself and keeps each partition's position in
// the task's state under a key in a key group chosen for the partition,
// so a position moves with its partition when the spout is rescaled; this
// is what effectively once uses (the state is the checkpoint), and what
// start=offset and start=timestamp need.

func init() {
	register(plugin.RegisterSpout(plugin.Spec{
		Name: "kafka",
		Summary: "Reads Kafka topics with franz-go (`value`, `key`, `topic`, `partition`, `offset`, `timestamp`, `headers`; docs/connectors.md). " +
			"Commits offsets only for fully processed records, replays failed ones; effectively once the positions are in the checkpoint, committed when it is global; starts at an offset or a timestamp.",
		Fields: []plugin.Field{
			{Name: "brokers", Type: plugin.TypeString, Reach: plugin.ReachBrokers, Required: true, Doc: "comma-separated seed brokers (host:port)"},
			{Name: "topics", Type: plugin.TypeString, Required: true, Doc: "comma-separated topics, or regular expressions with topic_regex"},
			{Name: "topic_regex", Type: plugin.TypeBool, Default: "false", Doc: "topics are regular expressions matched against every topic's name"},
			{Name: "group", Type: plugin.TypeString, Default: "", Doc: "consumer group offsets are committed to; empty: ardea-<topology>-<component>"},
			{Name: "assign", Type: plugin.TypeEnum, Enum: []string{"group", "partitions"}, Default: "group", Doc: "group: Kafka's group protocol spreads partitions over the tasks; partitions: the spout does, keeping positions in task state (used by effectively once whatever is set)"},
			{Name: "partitions", Type: plugin.TypeString, Default: "", Doc: "assign=partitions: comma-separated partition numbers to read (of every topic); empty: all"},
			{Name: "start", Type: plugin.TypeEnum, Enum: []string{"committed", "earliest", "latest", "offset", "timestamp"}, Default: "committed", Doc: "where a partition without a saved position starts: the group's committed offset (else reset), the earliest or latest offset, start_offset, or the first record at or after start_time (offset and timestamp need assign=partitions)"},
			{Name: "reset", Type: plugin.TypeEnum, Enum: []string{"earliest", "latest"}, Default: "earliest", Doc: "start=committed: where a partition without a committed offset starts"},
			{Name: "start_offset", Type: plugin.TypeInt, Default: "0", Min: "0", Doc: "start=offset: the offset every partition starts at"},
			{Name: "start_time", Type: plugin.TypeString, Default: "", Doc: "start=timestamp: RFC 3339 time or Unix milliseconds"},
			{Name: "key_type", Type: plugin.TypeEnum, Enum: []string{"string", "bytes"}, Default: "string", Doc: "type of the key field"},
			{Name: "value_type", Type: plugin.TypeEnum, Enum: []string{"string", "bytes"}, Default: "string", Doc: "type of the value field"},
			{Name: "commit_interval", Type: plugin.TypeDuration, Default: "1s", Min: "1ms", Doc: "at most and at least once: how often positions are committed"},
			{Name: "max_retries", Type: plugin.TypeInt, Default: "0", Min: "0", Doc: "at least once: a record that failed this many times goes to dead_letter_topic instead of being replayed again; 0 = replay forever"},
			{Name: "dead_letter_topic", Type: plugin.TypeString, Default: "", Doc: "topic that receives records given up after max_retries (headers say where they came from); required with max_retries"},
		},
		Outputs: map[string][]string{"default": kafkaFields},
	}, newKafkaSpout))
}

var kafkaFields = []string{"value", "key", "topic", "partition", "offset", "timestamp", "headers"}

type topicPart struct {
	topic string
	part  int32
}

// kflight is a record whose tuple tree has not completed (at least once).
type kflight struct {
	rec      *kgo.Record
	track    *partTrack
	slot     int64 // offset, the record's place in track
	retries  int
	timeouts int    // of retries, trees that timed out
	last     string // how the last tree failed
}

// partTrack follows one partition's records in flight, in offset order, so
// that the committable position is the oldest one not yet done.
type partTrack struct {
	tp    topicPart
	next  int64   // offset after the last record read
	first int64   // offset of offs[0]
	offs  []int64 // in-flight record offsets in order (may skip: compaction, transactions)
	done  []bool
	stale bool // revoked: outcomes are ignored
}

func (p *partTrack) add(off int64) {
	if len(p.offs) == 0 {
		p.first = off
	}
	p.offs = append(p.offs, off)
	p.done = append(p.done, false)
	p.next = off + 1
}

func (p *partTrack) finish(off int64) {
	i, ok := slices.BinarySearch(p.offs, off)
	if !ok {
		return
	}
	p.done[i] = true
	n := 0
	for n < len(p.done) && p.done[n] {
		n++
	}
	if n > 0 {
		p.offs, p.done = p.offs[n:], p.done[n:]
		if len(p.offs) > 0 {
			p.first = p.offs[0]
		}
	}
}

// position is where a restart must resume to lose nothing.
func (p *partTrack) position() int64 {
	if len(p.offs) > 0 {
		return p.offs[0]
	}
	return p.next
}

type kafkaSpout struct {
	brokers, topics, group, assign, start, reset, startTime, dlqTopic string
	regex, keyBytes, valueBytes                                       bool
	partitions                                                        []int32
	startOffset                                                       int64
	commitEvery                                                       time.Duration
	maxRetries                                                        int
	maxTuple                                                          int64  // the tuple limit
	tupleSetting                                                      string // the setting it comes from

	comp, topology string
	task, par      int
	maxKG          int
	stream0        uint16
	log            func(msg string, args ...any)
	metric         func(name string, delta int64)
	cl             *kgo.Client
	adm            *kadm.Client
	state          plugin.State
	acking, eo     bool
	keys           map[topicPart][]byte // assign=partitions: state key of each owned partition

	// mu guards tracks and flights: group rebalances run on franz-go's
	// goroutine.
	mu         sync.Mutex
	tracks     map[topicPart]*partTrack
	flights    map[uint64]*kflight
	nextID     uint64
	replay     []uint64
	buffered   []*kgo.Record // polled, not yet emitted (Next's budget)
	snaps      map[uint64]map[topicPart]int64
	lastCommit time.Time
	// failed: a record over the tuple limit without a dead-letter topic
	// ended the input; Next reports it once nothing is in flight.
	failed error
	vals   []byte
	hdr    []byte
	posBuf [8]byte
}

func newKafkaSpout(cfg plugin.Config) (plugin.Spout, error) {
	r := cfg.Reader()
	s := &kafkaSpout{brokers: r.String("brokers"), topics: r.String("topics"), regex: r.Bool("topic_regex"),
		group: r.String("group"), assign: r.String("assign"), start: r.String("start"), reset: r.String("reset"),
		startOffset: r.Int("start_offset"), startTime: r.String("start_time"),
		keyBytes: r.String("key_type") == "bytes", valueBytes: r.String("value_type") == "bytes",
		commitEvery: r.Duration("commit_interval"), maxRetries: int(r.Int("max_retries")), dlqTopic: r.String("dead_letter_topic")}
	s.maxTuple, s.tupleSetting = r.TupleLimit()
	partitions := r.String("partitions")
	if err := r.Err(); err != nil {
		return nil, err
	}
	if len(splitList(s.brokers)) == 0 {
		return nil, errors.New(`config "brokers": no broker address`)
	}
	if len(splitList(s.topics)) == 0 {
		return nil, errors.New(`config "topics": no topic`)
	}
	if s.regex {
		for _, t := range splitList(s.topics) {
			if _, err := regexp.Compile(t); err != nil {
				return nil, fmt.Errorf(`config "topics": %q: %w`, t, err)
			}
		}
	}
	for _, p := range splitList(partitions) {
		n, err := strconv.ParseInt(p, 10, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf(`config "partitions": %q is not a partition number`, p)
		}
		s.partitions = append(s.partitions, int32(n))
	}
	if len(s.partitions) > 0 && s.assign != "partitions" {
		return nil, errors.New(`config "partitions": needs assign: partitions`)
	}
	if (s.start == "offset" || s.start == "timestamp") && s.assign != "partitions" {
		return nil, fmt.Errorf(`config "start": %s needs assign: partitions (a group starts at its committed offsets)`, s.start)
	}
	if s.start == "timestamp" {
		if _, err := parseKafkaTime(s.startTime); err != nil {
			return nil, fmt.Errorf(`config "start_time": %w`, err)
		}
	}
	if s.maxRetries > 0 && s.dlqTopic == "" {
		return nil, errors.New(`config "max_retries": needs "dead_letter_topic", the topic that receives the records given up`)
	}
	return s, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// parseKafkaTime reads RFC 3339 or Unix milliseconds.
func parseKafkaTime(s string) (time.Time, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.UnixMilli(ms), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time nor Unix milliseconds", s)
	}
	return t, nil
}

func (s *kafkaSpout) errorf(format string, args ...any) error {
	return fmt.Errorf("component %q: kafka spout (topics %s): %w", s.comp, s.topics, fmt.Errorf(format, args...))
}

func (s *kafkaSpout) Open(ctx context.Context, tc plugin.TaskContext, _ plugin.Collector) error {
	s.comp, s.topology = tc.Component, tc.Topology
	st, err := outputStream(tc, "kafka spout", "default", len(kafkaFields))
	if err != nil {
		return err
	}
	s.stream0 = st
	ti, par := taskOf(tc)
	s.task, s.par, s.maxKG = int(ti), int(par), tc.MaxKeyGroups
	if s.maxKG <= 0 {
		s.maxKG = tuple.DefaultMaxKeyGroups
	}
	s.log = func(string, ...any) {}
	if tc.Logger != nil {
		s.log = tc.Logger.Info
	}
	s.metric = tc.Metric
	if s.metric == nil {
		s.metric = func(string, int64) {}
	}
	if s.group == "" {
		s.group = "ardea-" + tc.Topology + "-" + tc.Component
	}
	s.state, s.acking, s.eo = tc.State, tc.Acking, tc.Checkpointing
	if s.eo {
		s.assign = "partitions" // positions live in the checkpointed state
	}
	s.tracks, s.flights, s.snaps = map[topicPart]*partTrack{}, map[uint64]*kflight{}, map[uint64]map[topicPart]int64{}
	s.lastCommit = time.Now()
	if s.state == nil && s.assign == "partitions" {
		return s.errorf("assign=partitions needs task state")
	}
	opts := []kgo.Opt{kgo.SeedBrokers(splitList(s.brokers)...), kgo.ClientID("ardea-" + tc.Topology + "-" + tc.Component),
		kgo.FetchIsolationLevel(kgo.ReadCommitted())}
	admCl, err := kgo.NewClient(kgo.SeedBrokers(splitList(s.brokers)...))
	if err != nil {
		return s.errorf("%w", err)
	}
	s.adm = kadm.NewClient(admCl)
	if s.assign == "group" {
		reset := kgo.NewOffset().AtStart()
		if s.reset == "latest" || s.start == "latest" {
			reset = kgo.NewOffset().AtEnd()
		}
		// Static membership: a task restarted after a crash takes its
		// place in the group at once instead of after the session timeout.
		opts = append(opts, kgo.ConsumerGroup(s.group), kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(reset),
			kgo.InstanceID(s.instanceID()), kgo.SessionTimeout(10*time.Second),
			kgo.OnPartitionsRevoked(s.revoked), kgo.OnPartitionsLost(s.revoked))
		if s.regex {
			opts = append(opts, kgo.ConsumeRegex())
		}
		opts = append(opts, kgo.ConsumeTopics(splitList(s.topics)...))
	} else {
		offsets, err := s.ownedOffsets(ctx)
		if err != nil {
			s.adm.Close()
			return err
		}
		if len(offsets) > 0 {
			opts = append(opts, kgo.ConsumePartitions(offsets))
		}
	}
	if s.cl, err = kgo.NewClient(opts...); err != nil {
		s.adm.Close()
		return s.errorf("%w", err)
	}
	return nil
}

// revoked runs on franz-go's goroutine when the group takes partitions
// away: their positions are committed and their in-flight records
// forgotten (the new owner reads them again).
func (s *kafkaSpout) revoked(ctx context.Context, cl *kgo.Client, lost map[string][]int32) {
	s.mu.Lock()
	offs := map[string]map[int32]kgo.EpochOffset{}
	for topic, parts := range lost {
		for _, p := range parts {
			tp := topicPart{topic, p}
			if t := s.tracks[tp]; t != nil {
				t.stale = true
				if offs[topic] == nil {
					offs[topic] = map[int32]kgo.EpochOffset{}
				}
				offs[topic][p] = kgo.EpochOffset{Epoch: -1, Offset: t.position()}
				delete(s.tracks, tp)
			}
		}
	}
	s.buffered = slices.DeleteFunc(s.buffered, func(r *kgo.Record) bool { return slices.Contains(lost[r.Topic], r.Partition) })
	s.mu.Unlock()
	if len(offs) > 0 {
		cl.CommitOffsetsSync(ctx, offs, nil)
	}
}

func (s *kafkaSpout) Next(ctx context.Context, max int, out plugin.Collector) (plugin.Status, error) {
	st, err := s.next(ctx, max, out)
	if err == nil && !s.eo && time.Since(s.lastCommit) >= s.commitEvery {
		// Committed outside the lock: a group rebalance's callback takes it.
		s.lastCommit = time.Now()
		s.mu.Lock()
		pos := s.positions()
		s.mu.Unlock()
		err = s.commit(ctx, pos)
	}
	return st, err
}

func (s *kafkaSpout) next(ctx context.Context, max int, out plugin.Collector) (plugin.Status, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	// Replays first, at most half the budget, so new records keep flowing
	// past one that always fails.
	for len(s.replay) > 0 && n < max/2+1 && n < max {
		id := s.replay[0]
		s.replay = s.replay[1:]
		f := s.flights[id]
		if f == nil || f.track.stale {
			delete(s.flights, id)
			continue
		}
		if err := s.emit(id, f.rec, out); err != nil {
			return plugin.Emitted, err
		}
		s.metric("kafka_replayed", 1)
		n++
	}
	if s.failed != nil {
		// The input ended at an oversized record: replays only, then the
		// error once every tree completed.
		switch {
		case n > 0:
			return plugin.Emitted, nil
		case len(s.flights) == 0:
			return plugin.Done, s.failed
		}
		return plugin.Idle, nil
	}
	if len(s.buffered) < max-n {
		s.mu.Unlock()
		fs := s.cl.PollRecords(nil, max-n-len(s.buffered)) // nil: what is buffered, without waiting
		s.mu.Lock()
		var ferr error
		fs.EachError(func(topic string, p int32, err error) {
			if ferr == nil && !errors.Is(err, context.Canceled) {
				ferr = fmt.Errorf("%s/%d: %w", topic, p, err)
			}
		})
		if ferr != nil {
			s.metric("kafka_fetch_errors", 1)
			s.log("kafka fetch error (retried)", "err", ferr)
		}
		fs.EachRecord(func(r *kgo.Record) { s.buffered = append(s.buffered, r) })
	}
	for n < max && len(s.buffered) > 0 {
		r := s.buffered[0]
		s.encode(r)
		if int64(len(s.vals)) > s.maxTuple {
			if !s.oversized(ctx, r) {
				// Stop before it: its partition's position stays at it,
				// and what was polled after it is read again after a
				// restart.
				clear(s.buffered)
				s.buffered = nil
				s.cl.PauseFetchTopics(s.cl.GetConsumeTopics()...)
				switch {
				case n > 0:
					return plugin.Emitted, nil
				case len(s.flights) > 0:
					return plugin.Idle, nil
				}
				return plugin.Done, s.failed
			}
			n++ // the budget counts it (a dead letter was produced)
			continue
		}
		s.buffered[0] = nil
		s.buffered = s.buffered[1:]
		tp := topicPart{r.Topic, r.Partition}
		t := s.tracks[tp]
		if t == nil {
			t = &partTrack{tp: tp}
			s.tracks[tp] = t
		}
		var id uint64
		if s.acking {
			s.nextID++
			id = s.nextID
			t.add(r.Offset)
			s.flights[id] = &kflight{rec: r, track: t, slot: r.Offset}
		} else {
			t.next = r.Offset + 1
		}
		if err := out.Emit(s.stream0, tuple.NoTask, id, nil, s.vals); err != nil {
			return plugin.Emitted, err
		}
		s.metric("kafka_records", 1)
		s.metric("kafka_bytes", int64(len(r.Value)+len(r.Key)))
		s.savePosition(t)
		n++
	}
	if n == 0 {
		return plugin.Idle, nil
	}
	return plugin.Emitted, nil
}

func (s *kafkaSpout) emit(id uint64, r *kgo.Record, out plugin.Collector) error {
	s.encode(r)
	return out.Emit(s.stream0, tuple.NoTask, id, nil, s.vals)
}

// encode puts r's tuple in s.vals.
func (s *kafkaSpout) encode(r *kgo.Record) {
	s.hdr = s.hdr[:0]
	if len(r.Headers) > 0 {
		s.hdr = append(s.hdr, '{')
		for i, h := range r.Headers {
			if i > 0 {
				s.hdr = append(s.hdr, ',')
			}
			s.hdr = appendJSONString(s.hdr, []byte(h.Key))
			s.hdr = append(s.hdr, ':')
			s.hdr = appendJSONString(s.hdr, h.Value)
		}
		s.hdr = append(s.hdr, '}')
	}
	val, key := tuple.Str(string(r.Value)), tuple.Str(string(r.Key))
	if s.valueBytes {
		val = tuple.Bin(r.Value)
	}
	if s.keyBytes {
		key = tuple.Bin(r.Key)
	}
	s.vals = tuple.AppendValues(s.vals[:0], val, key, tuple.Str(r.Topic), tuple.Int(int64(r.Partition)),
		tuple.Int(r.Offset), tuple.Int(r.Timestamp.UnixMilli()), tuple.Str(string(s.hdr)))
}

// oversized handles buffered[0], r, whose tuple (in s.vals) exceeds the
// tuple limit: to the dead-letter topic if there is one (true: done, its
// partition's position moves past it), else (or if the dead letter was not
// stored) s.failed is set and the input ends before it (false). s.mu is
// held.
func (s *kafkaSpout) oversized(ctx context.Context, r *kgo.Record) bool {
	size := int64(len(s.vals))
	src := fmt.Sprintf("%s/%d/%d", r.Topic, r.Partition, r.Offset)
	var dlErr error
	if s.dlqTopic != "" {
		reason := tooLargeReason("record", size, s.tupleSetting, s.maxTuple)
		if dlErr = s.deadLetterRecord(ctx, r, 0, reason); dlErr == nil {
			s.metric("kafka_oversized", 1)
			s.buffered[0] = nil
			s.buffered = s.buffered[1:]
			tp := topicPart{r.Topic, r.Partition}
			t := s.tracks[tp]
			if t == nil {
				t = &partTrack{tp: tp}
				s.tracks[tp] = t
			}
			if s.acking {
				t.add(r.Offset)
				t.finish(r.Offset)
			} else {
				t.next = r.Offset + 1
			}
			s.savePosition(t)
			return true
		}
	}
	s.failed = &recordTooLargeError{Component: s.comp, Spout: fmt.Sprintf("kafka spout (topics %s)", s.topics), Source: src,
		What: "record", Size: size, Setting: s.tupleSetting, Limit: s.maxTuple, DeadLetter: dlErr}
	return false
}

// savePosition records a partition's position in the task state
// (assign=partitions).
func (s *kafkaSpout) savePosition(t *partTrack) {
	k := s.keys[t.tp]
	if k == nil {
		return
	}
	binary.LittleEndian.PutUint64(s.posBuf[:], uint64(t.position()))
	s.state.Put(k, s.posBuf[:])
}

// positions returns every partition's resume position.
func (s *kafkaSpout) positions() map[topicPart]int64 {
	out := make(map[topicPart]int64, len(s.tracks))
	for tp, t := range s.tracks {
		out[tp] = t.position()
	}
	return out
}

// commit commits positions to the group (not under s.mu).
func (s *kafkaSpout) commit(ctx context.Context, pos map[topicPart]int64) error {
	if len(pos) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if s.assign == "group" {
		offs := map[string]map[int32]kgo.EpochOffset{}
		for tp, o := range pos {
			if offs[tp.topic] == nil {
				offs[tp.topic] = map[int32]kgo.EpochOffset{}
			}
			offs[tp.topic][tp.part] = kgo.EpochOffset{Epoch: -1, Offset: o}
		}
		var cerr error
		s.cl.CommitOffsetsSync(ctx, offs, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err == nil {
				err = kerr.ErrorForCode(firstCommitError(resp))
			}
			cerr = err
		})
		return s.commitDone(cerr)
	}
	var offs kadm.Offsets
	for tp, o := range pos {
		offs.Add(kadm.Offset{Topic: tp.topic, Partition: tp.part, At: o, LeaderEpoch: -1})
	}
	resp, err := s.adm.CommitOffsets(ctx, s.group, offs)
	if err == nil {
		err = resp.Error()
	}
	return s.commitDone(err)
}

// commitDone counts a commit; a failed one is logged and retried at the
// next (positions only move forward, so nothing is lost).
func (s *kafkaSpout) commitDone(err error) error {
	if err != nil {
		s.metric("kafka_commit_errors", 1)
		s.log("kafka offset commit failed (retried)", "group", s.group, "err", err)
		return nil
	}
	s.metric("kafka_commits", 1)
	return nil
}

// Ack marks the records of completed trees done.
func (s *kafkaSpout) Ack(ctx context.Context, ids []uint64, _ plugin.Collector) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if f := s.flights[id]; f != nil {
			delete(s.flights, id)
			if !f.track.stale {
				f.track.finish(f.slot)
				s.savePosition(f.track)
			}
		}
	}
	return nil
}

// Fail queues the records for replay from Next; one failed max_retries
// times goes to the dead-letter topic instead.
func (s *kafkaSpout) Fail(ctx context.Context, ids []uint64, _ plugin.Collector) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		f := s.flights[id]
		if f == nil {
			continue
		}
		if f.track.stale {
			delete(s.flights, id)
			continue
		}
		f.retries++
		if s.maxRetries > 0 && f.retries >= s.maxRetries {
			if err := s.deadLetter(ctx, f); err != nil {
				return err
			}
			delete(s.flights, id)
			f.track.finish(f.slot)
			s.savePosition(f.track)
			continue
		}
		s.replay = append(s.replay, id)
	}
	return nil
}

// NoteFailures records how the trees about to be failed ended.
func (s *kafkaSpout) NoteFailures(fs []plugin.Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range fs {
		f := s.flights[x.MsgID]
		if f == nil {
			continue
		}
		if x.TimedOut {
			f.timeouts++
		}
		f.last = failureText(x)
	}
}

// failureText says how a record's trees ended.
func kafkaFailureText(failures, timeouts int, last string) string {
	if last == "" {
		last = "failed"
	}
	return fmt.Sprintf("%d failures (%d timed out); last: %s", failures, timeouts, last)
}

// deadLetter produces a given-up record to the dead-letter topic with
// headers naming its source, and waits until it is stored.
func (s *kafkaSpout) deadLetter(ctx context.Context, f *kflight) error {
	return s.deadLetterRecord(ctx, f.rec, f.retries, kafkaFailureText(f.retries, f.timeouts, f.last))
}

// deadLetterRecord produces r to the dead-letter topic with headers naming
// its source, its failures and why it was given up.
func (s *kafkaSpout) deadLetterRecord(ctx context.Context, r *kgo.Record, failures int, why string) error {
	hs := append(slices.Clone(r.Headers),
		kgo.RecordHeader{Key: "ardea-topology", Value: []byte(s.topology)},
		kgo.RecordHeader{Key: "ardea-component", Value: []byte(s.comp)},
		kgo.RecordHeader{Key: "ardea-source", Value: []byte(fmt.Sprintf("%s/%d/%d", r.Topic, r.Partition, r.Offset))},
		kgo.RecordHeader{Key: "ardea-failures", Value: []byte(strconv.Itoa(failures))},
		kgo.RecordHeader{Key: "ardea-error", Value: []byte(why)})
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := s.cl.ProduceSync(ctx, &kgo.Record{Topic: s.dlqTopic, Key: r.Key, Value: r.Value, Headers: hs, Timestamp: r.Timestamp}).FirstErr(); err != nil {
		return s.errorf("dead letter to %s: %w", s.dlqTopic, err)
	}
	s.metric("kafka_dead_letters", 1)
	s.log("kafka record sent to the dead-letter topic", "topic", s.dlqTopic, "source", fmt.Sprintf("%s/%d/%d", r.Topic, r.Partition, r.Offset), "failures", failures, "error", why)
	return nil
}

// Snapshot (effectively once) remembers the positions checkpoint id holds
// (they are in the task state already) to commit once it is global.
func (s *kafkaSpout) Snapshot(ctx context.Context, id uint64, _ plugin.Collector) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.snaps[id] = s.positions()
	return nil
}

// CheckpointCommitted commits the positions of the newest snapshot at or
// before checkpoint id and forgets the older ones.
func (s *kafkaSpout) CheckpointCommitted(ctx context.Context, id uint64, _ plugin.Collector) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var best uint64
	for sid := range s.snaps {
		if sid <= id && sid > best {
			best = sid
		}
	}
	if best == 0 {
		return nil
	}
	pos := s.snaps[best]
	for sid := range s.snaps {
		if sid <= id {
			delete(s.snaps, sid)
		}
	}
	s.mu.Unlock()
	defer s.mu.Lock()
	return s.commit(ctx, pos)
}

func (s *kafkaSpout) Activate(ctx context.Context) error   { return nil }
func (s *kafkaSpout) Deactivate(ctx context.Context) error { return nil }

// Close commits what is complete (not effectively once: there only a
// global checkpoint's positions are committed) and leaves the rest to be
// read again.
func (s *kafkaSpout) Close(ctx context.Context) error {
	if s.cl == nil {
		return nil
	}
	// The commit and the leave below run even if the caller gave up: they
	// spare the next reader a re-read and a rebalance wait. Each is
	// bounded by its own timeout.
	ctx = context.WithoutCancel(ctx)
	if !s.eo {
		s.mu.Lock()
		pos := s.positions()
		s.mu.Unlock()
		_ = s.commit(ctx, pos)
	}
	s.cl.Close()
	if s.assign == "group" {
		// A static member does not leave on close; leave explicitly so
		// that its partitions move now (a crashed task never gets here:
		// its successor takes its place at once instead).
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, _ = s.adm.LeaveGroup(ctx, kadm.LeaveGroup(s.group).InstanceIDs(s.instanceID()).Reason("ardea task closed"))
		cancel()
	}
	s.adm.Close()
	s.cl, s.adm = nil, nil
	return nil
}

func (s *kafkaSpout) instanceID() string { return s.group + "-" + strconv.Itoa(s.task) }

func firstCommitError(resp *kmsg.OffsetCommitResponse) int16 {
	if resp == nil {
		return 0
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				return p.ErrorCode
			}
		}
	}
	return 0
}
