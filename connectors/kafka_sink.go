package connectors

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// The kafka sink produces every input tuple as a record: the key from
// key_field (else none), the value from value_field (else a JSON object of
// every field), the topic from topic_field (else topic).
//
// At most and at least once it produces idempotently (retries never
// duplicate a record in Kafka) and acks a tuple once Kafka stored its
// record; a record Kafka refuses fails its tuple.
//
// Effectively once it writes ahead: the records of each checkpoint
// interval are kept in the task's state at the barrier (so the checkpoint
// holds them), and written in one Kafka transaction once that checkpoint
// is global. The transaction also commits the checkpoint's sequence
// number as the offset of a marker consumer group, atomically with the
// records; a sink restarted from a checkpoint writes only what the marker
// shows missing, so no record is lost or written twice, and read_committed
// consumers see the output of completed checkpoints only. The state holds
// at most one interval's output (plus any not yet committed).

func init() {
	register(plugin.RegisterBolt(plugin.Spec{
		Name:    "kafka",
		Summary: "Produces tuples to Kafka (franz-go): idempotent; transactional and exactly once with effectively-once checkpoints.",
		Fields: []plugin.Field{
			{Name: "brokers", Type: plugin.TypeString, Reach: plugin.ReachBrokers, Required: true, Doc: "comma-separated seed brokers (host:port)"},
			{Name: "topic", Type: plugin.TypeString, Default: "", Doc: "topic to produce to (required unless topic_field)"},
			{Name: "topic_field", Type: plugin.TypeString, Default: "", Doc: "input field holding each record's topic"},
			{Name: "key_field", Type: plugin.TypeString, Default: "", Doc: "input field used as the record key (Kafka partitions by it); empty: no key"},
			{Name: "value_field", Type: plugin.TypeString, Default: "", Doc: "input field used as the record value; empty: a JSON object of every field"},
			{Name: "transactional_id", Type: plugin.TypeString, Default: "", Doc: "effectively once: prefix of the transactional ids (one per task); empty: ardea-<topology>-<component>"},
			{Name: "timeout", Type: plugin.TypeDuration, Default: "30s", Min: "1ms", Doc: "how long a batch (or a transaction) waits for Kafka"},
		},
	}, newKafkaSink))
}

type kafkaSink struct {
	brokers, topic, topicField, keyField, valueField, txnPrefix string
	timeout                                                     time.Duration

	comp     string
	cl       *kgo.Client
	adm      *kadm.Client
	keys     [][][]byte // per input: JSON keys
	topicIdx []int      // per input: field index, -1 none
	keyIdx   []int
	valueIdx []int
	vals     []tuple.Value
	metric   func(string, int64)

	// Effectively once.
	eo      bool
	state   plugin.State
	txnID   string
	marker  string            // consumer group whose committed offset is the last written sequence
	markTP  topicPart         // partition the marker offset is committed for
	buf     []byte            // encoded records since the last barrier
	nbuf    int               // records in buf
	seqKey  []byte            // state key of the last sequence assigned
	walBase string            // state key prefix of written-ahead records
	pending map[uint64]uint64 // checkpoint id -> sequence of its records
}

func newKafkaSink(cfg plugin.Config) (plugin.Bolt, error) {
	r := cfg.Reader()
	s := &kafkaSink{brokers: r.String("brokers"), topic: r.String("topic"), topicField: r.String("topic_field"),
		keyField: r.String("key_field"), valueField: r.String("value_field"), txnPrefix: r.String("transactional_id"),
		timeout: r.Duration("timeout")}
	if err := r.Err(); err != nil {
		return nil, err
	}
	if len(splitList(s.brokers)) == 0 {
		return nil, errors.New(`config "brokers": no broker address`)
	}
	if s.topic == "" && s.topicField == "" {
		return nil, errors.New(`config "topic": required unless "topic_field" names the field holding each record's topic`)
	}
	return s, nil
}

func (s *kafkaSink) errorf(format string, args ...any) error {
	return fmt.Errorf("component %q: kafka sink (topic %s): %w", s.comp, s.topic, fmt.Errorf(format, args...))
}

func (s *kafkaSink) Prepare(ctx context.Context, tc plugin.TaskContext, _ plugin.Collector) error {
	s.comp = tc.Component
	s.metric = tc.Metric
	if s.metric == nil {
		s.metric = func(string, int64) {}
	}
	find := func(in tuple.InputDecl, cfgKey, name string) (int, error) {
		if name == "" {
			return -1, nil
		}
		if i := slices.Index(in.Fields, name); i >= 0 {
			return i, nil
		}
		return 0, fmt.Errorf("component %q: kafka sink: config %q: input from %q has no field %q (fields %v)", s.comp, cfgKey, in.Component, name, in.Fields)
	}
	for _, in := range tc.Inputs {
		var ks [][]byte
		for _, name := range in.Fields {
			ks = append(ks, append(appendJSONString(nil, []byte(name)), ':'))
		}
		s.keys = append(s.keys, ks)
		ti, err := find(in, "topic_field", s.topicField)
		if err != nil {
			return err
		}
		ki, err := find(in, "key_field", s.keyField)
		if err != nil {
			return err
		}
		vi, err := find(in, "value_field", s.valueField)
		if err != nil {
			return err
		}
		s.topicIdx, s.keyIdx, s.valueIdx = append(s.topicIdx, ti), append(s.keyIdx, ki), append(s.valueIdx, vi)
	}
	opts := []kgo.Opt{kgo.SeedBrokers(splitList(s.brokers)...), kgo.ClientID("ardea-" + tc.Topology + "-" + tc.Component),
		kgo.ProduceRequestTimeout(s.timeout), kgo.RecordDeliveryTimeout(s.timeout),
		// Each batch is produced whole and then waited for: lingering
		// would only delay the acks.
		kgo.ProducerLinger(0)}
	s.eo = tc.Checkpointing
	if s.eo {
		if tc.State == nil {
			return s.errorf("effectively once needs task state")
		}
		if s.topic == "" {
			return s.errorf(`effectively once needs "topic" (the marker offset is committed for its partition 0)`)
		}
		prefix := s.txnPrefix
		if prefix == "" {
			prefix = "ardea-" + tc.Topology + "-" + tc.Component
		}
		s.txnID = prefix + "-" + strconv.Itoa(int(tc.TaskIndex))
		s.marker = s.txnID + "-marker"
		s.markTP = topicPart{s.topic, 0}
		ti, par := taskOf(tc)
		s.state = tc.State
		s.seqKey = positionKey("ardea.kafka.sink.seq.", tc.MaxKeyGroups, int(ti), int(par))
		s.walBase = "ardea.kafka.sink.wal." + string(s.seqKey) + "."
		s.pending = map[uint64]uint64{}
		// The marker's TxnOffsetCommit is sent by hand; the protocol
		// versions before KIP-890's second part keep it a plain
		// AddOffsetsToTxn + TxnOffsetCommit pair on every broker.
		opts = append(opts, kgo.TransactionalID(s.txnID), kgo.TransactionTimeout(max(s.timeout, 10*time.Second)),
			kgo.MaxVersions(kversion.V3_9_0()))
	}
	var err error
	if s.cl, err = kgo.NewClient(opts...); err != nil {
		return s.errorf("%w", err)
	}
	s.adm = kadm.NewClient(s.cl)
	if s.eo {
		// Fence a previous incarnation and finish what the checkpoint we
		// start from holds.
		return s.writeAhead(ctx, 0)
	}
	return nil
}

// record builds the Kafka record of one input tuple.
func (s *kafkaSink) record(input int, vals []tuple.Value) (*kgo.Record, error) {
	r := &kgo.Record{Topic: s.topic}
	if i := s.topicIdx[input]; i >= 0 {
		if i >= len(vals) || vals[i].Kind != tuple.String || len(vals[i].B) == 0 {
			return nil, fmt.Errorf("field %q: want a topic name (a non-empty string)", s.topicField)
		}
		r.Topic = string(vals[i].B)
	}
	var ok bool
	if i := s.keyIdx[input]; i >= 0 {
		if r.Key, ok = fieldBytes(vals, i); !ok {
			return nil, fmt.Errorf("key field %q: the tuple has %d fields", s.keyField, len(vals))
		}
	}
	if i := s.valueIdx[input]; i >= 0 {
		if r.Value, ok = fieldBytes(vals, i); !ok {
			return nil, fmt.Errorf("value field %q: the tuple has %d fields", s.valueField, len(vals))
		}
	} else {
		r.Value = appendJSONObject(nil, s.keys[input], vals)
	}
	return r, nil
}

func (s *kafkaSink) Execute(ctx context.Context, batch []byte, out plugin.Collector) error {
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
		if int(rec.Input) >= len(s.keys) {
			return s.errorf("record %d: input index %d, but the task has %d inputs", i, rec.Input, len(s.keys))
		}
		kr, err := s.record(int(rec.Input), s.vals)
		if err != nil {
			// A bad tuple fails alone (at least once its spout replays it
			// or sends it to its dead letters); the rest goes on.
			s.metric("kafka_bad_records", 1)
			out.Fail(rec.TupleID)
			continue
		}
		if s.eo {
			s.buf = appendKafkaRecord(s.buf, kr)
			s.nbuf++
			out.Ack(rec.TupleID)
			continue
		}
		n := sends.add(rec.TupleID)
		s.cl.Produce(ctx, kr, func(_ *kgo.Record, err error) { sends.done(n, err) })
	}
	// An idempotent producer keeps retrying a record it may have sent, so
	// the wait is bounded here.
	stored, failed, timedOut := sends.await(out, s.timeout)
	s.metric("kafka_records", int64(stored))
	s.metric("kafka_produce_errors", int64(failed))
	s.metric("kafka_produce_timeouts", int64(timedOut))
	return nil
}

// appendKafkaRecord encodes a record for the write-ahead state: topic, key
// and value, each length-prefixed; a nil key stays nil.
func appendKafkaRecord(dst []byte, r *kgo.Record) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(r.Topic)))
	dst = append(dst, r.Topic...)
	if r.Key == nil {
		dst = append(dst, 0)
	} else {
		dst = append(dst, 1)
		dst = binary.AppendUvarint(dst, uint64(len(r.Key)))
		dst = append(dst, r.Key...)
	}
	dst = binary.AppendUvarint(dst, uint64(len(r.Value)))
	return append(dst, r.Value...)
}

func decodeKafkaRecords(b []byte) ([]*kgo.Record, error) {
	var out []*kgo.Record
	next := func() ([]byte, error) {
		n, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n {
			return nil, errors.New("truncated write-ahead record")
		}
		v := b[k : k+int(n)]
		b = b[k+int(n):]
		return v, nil
	}
	for len(b) > 0 {
		r := &kgo.Record{}
		t, err := next()
		if err != nil {
			return nil, err
		}
		r.Topic = string(t)
		if len(b) == 0 {
			return nil, errors.New("truncated write-ahead record")
		}
		hasKey := b[0] == 1
		b = b[1:]
		if hasKey {
			if r.Key, err = next(); err != nil {
				return nil, err
			}
		}
		if r.Value, err = next(); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Snapshot (effectively once) moves the interval's records into the state
// under the next sequence number: the checkpoint holds them.
func (s *kafkaSink) Snapshot(ctx context.Context, id uint64, _ plugin.Collector) error {
	if s.nbuf == 0 {
		return nil
	}
	seq := s.stash()
	s.pending[id] = seq
	return nil
}

func (s *kafkaSink) stash() uint64 {
	var seq uint64
	if v, ok := s.state.Get(s.seqKey); ok && len(v) == 8 {
		seq = binary.LittleEndian.Uint64(v)
	}
	seq++
	s.state.Put(s.seqKey, binary.LittleEndian.AppendUint64(nil, seq))
	s.state.Put(s.walKey(seq), s.buf)
	s.buf, s.nbuf = s.buf[:0], 0
	return seq
}

func (s *kafkaSink) walKey(seq uint64) []byte {
	return fmt.Appendf(nil, "%s%020d", s.walBase, seq)
}

// CheckpointCommitted writes the records of checkpoints up to id.
func (s *kafkaSink) CheckpointCommitted(ctx context.Context, id uint64, _ plugin.Collector) error {
	var upto uint64
	for cid, seq := range s.pending {
		if cid <= id {
			upto = max(upto, seq)
			delete(s.pending, cid)
		}
	}
	if upto == 0 {
		return nil
	}
	return s.writeAhead(ctx, upto)
}

// writeAhead writes every stashed sequence up to upto (0: all) that the
// marker does not show written, one transaction each, in order.
func (s *kafkaSink) writeAhead(ctx context.Context, upto uint64) error {
	ctx, cancel := context.WithTimeout(ctx, 2*s.timeout)
	defer cancel()
	type wal struct {
		seq uint64
		key []byte
		val []byte
	}
	var todo []wal
	s.state.Scan([]byte(s.walBase), func(k, v []byte) bool {
		seq, err := strconv.ParseUint(strings.TrimPrefix(string(k), s.walBase), 10, 64)
		if err == nil && (upto == 0 || seq <= upto) {
			todo = append(todo, wal{seq, slices.Clone(k), slices.Clone(v)})
		}
		return true
	})
	if len(todo) == 0 {
		return nil
	}
	offs, err := s.adm.FetchOffsets(ctx, s.marker)
	for kerr.IsRetriable(err) && ctx.Err() == nil {
		// COORDINATOR_NOT_AVAILABLE while a new cluster creates its
		// offsets topic, and the like.
		time.Sleep(100 * time.Millisecond)
		offs, err = s.adm.FetchOffsets(ctx, s.marker)
	}
	if errors.Is(err, kerr.GroupIDNotFound) {
		err = nil // nothing written yet
	}
	if err != nil {
		return s.errorf("read marker group %s: %w", s.marker, err)
	}
	var written int64 = -1
	if o, ok := offs.Lookup(s.markTP.topic, s.markTP.part); ok && o.Err == nil {
		written = o.At
	}
	for _, w := range todo {
		if int64(w.seq) > written {
			recs, err := decodeKafkaRecords(w.val)
			if err != nil {
				return s.errorf("write-ahead sequence %d: %w", w.seq, err)
			}
			if err := s.transact(ctx, w.seq, recs); err != nil {
				return err
			}
			s.metric("kafka_records", int64(len(recs)))
			s.metric("kafka_transactions", 1)
		}
		s.state.Delete(w.key)
	}
	return nil
}

// transact writes recs and the marker offset seq in one transaction.
func (s *kafkaSink) transact(ctx context.Context, seq uint64, recs []*kgo.Record) error {
	if err := s.cl.BeginTransaction(); err != nil {
		return s.errorf("begin transaction: %w", err)
	}
	abort := func(err error) error {
		if aerr := s.cl.EndTransaction(ctx, kgo.TryAbort); aerr != nil {
			err = errors.Join(err, aerr)
		}
		return s.errorf("transaction for sequence %d: %w", seq, err)
	}
	if err := s.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return abort(err)
	}
	if err := s.commitMarker(ctx, seq); err != nil {
		return abort(err)
	}
	if err := s.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return s.errorf("commit transaction for sequence %d: %w", seq, err)
	}
	return nil
}

// commitMarker adds the marker group to the transaction and commits seq as
// its offset (the classic AddOffsetsToTxn + TxnOffsetCommit pair).
func (s *kafkaSink) commitMarker(ctx context.Context, seq uint64) error {
	pid, epoch, err := s.cl.ProducerID(ctx)
	if err != nil {
		return err
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = s.txnID, pid, epoch, s.marker
	aresp, err := add.RequestWith(ctx, s.cl)
	if err != nil {
		return fmt.Errorf("add marker group: %w", err)
	}
	if err := kerr.ErrorForCode(aresp.ErrorCode); err != nil {
		return fmt.Errorf("add marker group: %w", err)
	}
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = s.txnID, s.marker, pid, epoch, -1
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = s.markTP.topic
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch = s.markTP.part, int64(seq), -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, s.cl)
	if err != nil {
		return fmt.Errorf("commit marker: %w", err)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("commit marker: %w", err)
			}
		}
	}
	return nil
}

func (s *kafkaSink) Tick(context.Context, plugin.Collector) error { return nil }

// Finish (effectively once) writes what the last interval produced: the
// input has ended, so no checkpoint will cover it.
func (s *kafkaSink) Finish(ctx context.Context, _ plugin.Collector) error {
	if !s.eo || s.nbuf == 0 {
		return nil
	}
	s.stash()
	return s.writeAhead(ctx, 0)
}

// Close stashes records not yet covered by a checkpoint into the state (a
// live re-plan hands the state to the next task, which writes them).
func (s *kafkaSink) Close(ctx context.Context) error {
	if s.cl == nil {
		return nil
	}
	if s.eo && s.nbuf > 0 {
		s.stash()
	}
	s.cl.Close()
	s.cl = nil
	return nil
}
