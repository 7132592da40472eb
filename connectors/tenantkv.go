package connectors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/internal/names"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// The KV spout and sink (builtin:kv) read and write a tenant KV bucket: a
// JetStream key-value bucket the tenant made for its own input and output
// (`ardea kv create NAME`, POST /api/v1/kv). Like builtin:stream they
// take a bucket name, never an address, and use the container's own NATS
// connection (plugin.TaskContext.Bus): in a daemon the host's credential,
// in its tenant's account, which reaches exactly the buckets its topology
// names (names.TenantKV; never the daemon's own buckets). So they need no
// admin leave (docs/tenancy.md).
//
// The sink puts each tuple under the key of its key_field (the value: a
// field, or the whole tuple as a JSON object), or deletes or purges the
// key when its op_field says so. It publishes a batch's writes on the
// bucket's subjects asynchronously, as kv.Put and kv.Delete publish them
// one at a time (a put on $KV.<bucket>.<key>, a delete with the
// KV-Operation header), and acks each tuple once the bucket stored it.
//
// The spout follows the bucket: it emits each key's current value, then
// every update (key, value, op, revision). It reads the bucket's stream
// through a durable pull consumer filtered to its keys, which is what a
// KV watch is (kv.Watch) with acks: at most once a revision is acked as
// it is emitted, at least once when its tuple tree completes (a failed
// tree naks it and it is redelivered), and a restarted spout carries on
// where it stopped. An ordered watch has neither acks nor a position
// kept across restarts, so it could honour neither mode.
//
// A daemon's host may not make buckets; a connection without a credential
// (`ardea run`'s embedded server) makes a missing bucket on first use.

// TenantKVDefaultMaxBytes bounds a tenant KV bucket made without a size:
// 1 GiB, and within its tenant's JetStream disk quota in any case.
const TenantKVDefaultMaxBytes = 1 << 30

// The KV spout's deliver policies.
const (
	kvDeliverLastPerKey = "last_per_key"
	kvDeliverAll        = "all"
	kvDeliverNew        = "new"
)

// The ops the KV spout emits and the sink's op_field takes.
const (
	kvOpNamePut    = "put"
	kvOpNameDelete = "delete"
	kvOpNamePurge  = "purge"
)

// The JetStream KV headers (nats.go does not export them).
const (
	kvOpHeader     = "KV-Operation"
	kvOpDel        = "DEL"
	kvOpPurge      = "PURGE"
	kvRollupHeader = "Nats-Rollup"
	kvRollupSubj   = "sub"
)

func init() {
	register(plugin.RegisterSpout(plugin.Spec{
		Name: "kv",
		Summary: "Follows one of the tenant's own KV buckets (`ardea kv create`): each key's current value, then every update, as `key`, `value` (a string), `op` (put, delete, purge) and `revision`, through a durable consumer shared by the tasks; takes a bucket name, no address, and needs no admin leave. " +
			"At most once it acks an update as it emits it, at least once when its tuple tree completes; a failed tree naks it (redelivered).",
		Fields: []plugin.Field{
			{Name: "bucket", Type: plugin.TypeString, Required: true, Doc: "the tenant KV bucket to follow (letters, digits, '_' or '-'; see ardea kv ls)"},
			{Name: "keys", Type: plugin.TypeString, Default: ">", Doc: "the keys to follow: a key, or a pattern with '*' (one token) or a final '>' (the rest); '>': all"},
			{Name: "deliver", Type: plugin.TypeEnum, Enum: []string{kvDeliverLastPerKey, kvDeliverAll, kvDeliverNew}, Default: kvDeliverLastPerKey,
				Doc: "where a new consumer starts: each key's current value (last_per_key), every revision the bucket keeps (all), or only updates from now on (new); a restarted spout carries on where it stopped"},
			{Name: "durable", Type: plugin.TypeString, Default: "", Doc: "durable consumer name (letters, digits, '_' or '-'); empty: ardea-<topology>-<component>"},
			{Name: "batch", Type: plugin.TypeInt, Default: "256", Min: "1", Doc: "most updates fetched at once"},
			{Name: "ack_wait", Type: plugin.TypeDuration, Default: "30s", Min: "1ms", Doc: "an update not acked within this is redelivered"},
		},
		Outputs: map[string][]string{"default": {"key", "value", "op", "revision"}},
	}, newTenantKVSpout))
	register(plugin.RegisterBolt(plugin.Spec{
		Name: "kv",
		Summary: "Puts every tuple into one of the tenant's own KV buckets under the key of its key_field (the value: value_field, or the whole tuple as a JSON object), or deletes the key when op_field says so (read it with `ardea kv get`); takes a bucket name, no address, and needs no admin leave. " +
			"Acks tuples once the bucket stored them; a tuple whose key is not a valid key fails.",
		Fields: []plugin.Field{
			{Name: "bucket", Type: plugin.TypeString, Required: true, Doc: "the tenant KV bucket to write (letters, digits, '_' or '-'; see ardea kv ls)"},
			{Name: "key_field", Type: plugin.TypeString, Default: "key", Doc: "the input field holding the key (letters, digits, and - / _ = . ; not starting or ending with '.')"},
			{Name: "value_field", Type: plugin.TypeString, Default: "", Doc: "the input field holding the value (a string's or bytes' content, a number's text); empty: the whole tuple as a JSON object"},
			{Name: "op_field", Type: plugin.TypeString, Default: "", Doc: "the input field saying what to do: put (or empty), delete (a delete marker, the history kept) or purge (the key's history removed); empty: every tuple is a put"},
			{Name: "timeout", Type: plugin.TypeDuration, Default: "10s", Min: "1ms", Doc: "how long a batch waits for the bucket's acknowledgements"},
		},
	}, newTenantKVSink))
}

// ValidKVName checks a tenant KV bucket's name.
func ValidKVName(name string) error {
	if !names.Valid(name) {
		return fmt.Errorf("bucket name %q: 1 to %d letters, digits, '_' or '-'", name, names.MaxLen)
	}
	return nil
}

// ValidKVKey checks a key as JetStream KV takes it: letters, digits and
// - / _ = . , not starting or ending with '.' nor holding "..".
func ValidKVKey(key string) error {
	if !kvKeyValid(key, false) {
		return fmt.Errorf("key %q: letters, digits and - / _ = . only, not starting or ending with '.' nor holding '..'", key)
	}
	return nil
}

// ValidKVKeyFilter checks a key pattern: a key whose tokens may be '*',
// the last one '>'.
func ValidKVKeyFilter(filter string) error {
	if !kvKeyValid(filter, true) {
		return fmt.Errorf("keys %q: a key, or a pattern whose tokens may be '*' and whose last token may be '>'", filter)
	}
	return nil
}

func kvKeyValid(key string, pattern bool) bool {
	if key == "" || len(key) > 1024 || key[0] == '.' || key[len(key)-1] == '.' || strings.Contains(key, "..") {
		return false
	}
	for i := 0; i < len(key); i++ {
		b := key[i]
		if b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || strings.IndexByte("-/_=.", b) >= 0 {
			continue
		}
		if !pattern || b != '*' && b != '>' {
			return false
		}
	}
	if pattern {
		// Wildcards are whole tokens; '>' only the last.
		toks := strings.Split(key, ".")
		for i, t := range toks {
			if strings.ContainsAny(t, "*>") && t != "*" && t != ">" || t == ">" && i != len(toks)-1 {
				return false
			}
		}
	}
	return true
}

// TenantKVConfig is the JetStream configuration of tenant KV bucket name
// (file storage, history revisions per key, maxBytes at most; 0: 1
// revision, TenantKVDefaultMaxBytes). The daemon's create and `ardea
// run`'s first use make the same bucket. Past maxBytes a put is refused
// (a KV bucket discards new writes, not old values).
func TenantKVConfig(name string, history int, maxBytes int64) jetstream.KeyValueConfig {
	if maxBytes <= 0 {
		maxBytes = TenantKVDefaultMaxBytes
	}
	if history <= 0 {
		history = 1
	}
	bucket, _, _ := names.TenantKV(name)
	return jetstream.KeyValueConfig{Bucket: bucket, History: uint8(min(history, jetstream.KeyValueMaxHistory)),
		MaxBytes: maxBytes, Storage: jetstream.FileStorage, Description: "ardea tenant KV bucket " + name}
}

// openTenantKV binds to tenant KV bucket name. A missing one is made when
// the connection carries no credential (`ardea run`'s embedded server); a
// daemon's host may not make buckets, so it names the command that does.
func openTenantKV(ctx context.Context, js jetstream.JetStream, name string) (jetstream.KeyValue, error) {
	bucket, _, _ := names.TenantKV(name)
	kv, err := js.KeyValue(ctx, bucket)
	if !errors.Is(err, jetstream.ErrBucketNotFound) {
		return kv, err
	}
	if o := js.Conn().Opts; o.UserJWT != nil || o.Nkey != "" || o.User != "" || o.Token != "" {
		return nil, fmt.Errorf("no KV bucket %s in this tenant: create it first (ardea kv create %s)", name, name)
	}
	return js.CreateKeyValue(ctx, TenantKVConfig(name, 0, 0))
}

func newTenantKVSpout(cfg plugin.Config) (plugin.Spout, error) {
	r := cfg.Reader()
	name, keys := r.String("bucket"), r.String("keys")
	s := &jsSpout{tenant: true, name: name, durable: r.String("durable"), batch: int(r.Int("batch")), ackWait: r.Duration("ack_wait")}
	switch r.String("deliver") {
	case kvDeliverAll:
		s.deliver = jetstream.DeliverAllPolicy
	case kvDeliverNew:
		s.deliver = jetstream.DeliverNewPolicy
	default:
		s.deliver = jetstream.DeliverLastPerSubjectPolicy
	}
	_, s.stream, s.kvPrefix = names.TenantKV(name)
	s.subject = s.kvPrefix + keys
	s.maxTuple, s.tupleSetting = r.TupleLimit()
	if err := r.Err(); err != nil {
		return nil, err
	}
	if err := ValidKVName(name); err != nil {
		return nil, fmt.Errorf(`config "bucket": %w`, err)
	}
	if err := ValidKVKeyFilter(keys); err != nil {
		return nil, fmt.Errorf(`config "keys": %w`, err)
	}
	if s.durable != "" && !names.Valid(s.durable) {
		return nil, fmt.Errorf(`config "durable" %q: letters, digits, '_' or '-' only`, s.durable)
	}
	return s, nil
}

// appendKVValues appends the values of KV update m (a message of the
// bucket's stream): key, value, op, revision.
func (s *jsSpout) appendKVValues(dst []byte, m jetstream.Msg) []byte {
	op := kvOpNamePut
	switch m.Headers().Get(kvOpHeader) {
	case kvOpDel:
		op = kvOpNameDelete
	case kvOpPurge:
		op = kvOpNamePurge
	}
	var rev uint64
	if md, err := m.Metadata(); err == nil {
		rev = md.Sequence.Stream
	}
	return tuple.AppendValues(dst, tuple.Str(strings.TrimPrefix(m.Subject(), s.kvPrefix)),
		tuple.Value{Kind: tuple.String, B: m.Data()}, tuple.Str(op), tuple.Int(int64(rev)))
}

// kvSink is builtin:kv's bolt.
type kvSink struct {
	name, prefix                  string
	keyField, valueField, opField string
	timeout                       time.Duration
	comp                          string
	log                           *slog.Logger
	metric                        func(string, int64)
	js                            jetstream.JetStream
	keyIdx, valIdx, opIdx         []int      // per input; -1: none
	fields                        [][][]byte // per input: JSON keys, for whole-tuple values
	vals                          []tuple.Value
	ids                           []uint64
	futures                       []jetstream.PubAckFuture
	invalidLogged                 bool
	puts, deletes                 int64
}

func newTenantKVSink(cfg plugin.Config) (plugin.Bolt, error) {
	r := cfg.Reader()
	s := &kvSink{name: r.String("bucket"), keyField: r.String("key_field"), valueField: r.String("value_field"),
		opField: r.String("op_field"), timeout: r.Duration("timeout")}
	_, _, s.prefix = names.TenantKV(s.name)
	if err := r.Err(); err != nil {
		return nil, err
	}
	if err := ValidKVName(s.name); err != nil {
		return nil, fmt.Errorf(`config "bucket": %w`, err)
	}
	if s.keyField == "" {
		return nil, errors.New(`config "key_field": want the input field holding the key`)
	}
	return s, nil
}

func (s *kvSink) errorf(format string, args ...any) error {
	return fmt.Errorf("component %q: kv sink (bucket %s): %w", s.comp, s.name, fmt.Errorf(format, args...))
}

func (s *kvSink) Prepare(ctx context.Context, tc plugin.TaskContext, _ plugin.Collector) error {
	s.comp, s.log, s.metric = tc.Component, tc.Logger, tc.Metric
	if s.metric == nil {
		s.metric = func(string, int64) {}
	}
	var err error
	if s.js, err = busJetStream(tc); err != nil {
		return s.errorf("%w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := openTenantKV(cctx, s.js, s.name); err != nil {
		return s.errorf("%w", err)
	}
	n := len(tc.Inputs)
	s.keyIdx, s.valIdx, s.opIdx, s.fields = make([]int, n), make([]int, n), make([]int, n), make([][][]byte, n)
	for i, in := range tc.Inputs {
		find := func(setting, field string) (int, error) {
			if field == "" {
				return -1, nil
			}
			for j, f := range in.Fields {
				if f == field {
					return j, nil
				}
			}
			return -1, s.errorf("config %q: input %s (stream %s) has no field %q (its fields: %v)", setting, in.Component, in.Stream, field, in.Fields)
		}
		if s.keyIdx[i], err = find("key_field", s.keyField); err != nil {
			return err
		}
		if s.valIdx[i], err = find("value_field", s.valueField); err != nil {
			return err
		}
		if s.opIdx[i], err = find("op_field", s.opField); err != nil {
			return err
		}
		for _, f := range in.Fields {
			s.fields[i] = append(s.fields[i], append(appendJSONString(nil, []byte(f)), ':'))
		}
	}
	return nil
}

// bad fails tuple id, whose record cannot be written, and says why once.
func (s *kvSink) bad(out plugin.Collector, id uint64, why string) {
	out.Fail(id)
	s.metric("kv_invalid", 1)
	if !s.invalidLogged && s.log != nil {
		s.invalidLogged = true
		s.log.Warn("kv sink: a tuple is not written (its tuple fails; further ones are only counted in kv_invalid)", "bucket", s.name, "why", why)
	}
}

func (s *kvSink) Execute(ctx context.Context, batch []byte, out plugin.Collector) error {
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
		in := int(rec.Input)
		if in >= len(s.keyIdx) {
			return s.errorf("record %d: input index %d, but the task has %d inputs", i, rec.Input, len(s.keyIdx))
		}
		key, _ := fieldBytes(s.vals, s.keyIdx[in])
		if err := ValidKVKey(string(key)); err != nil {
			s.bad(out, rec.TupleID, err.Error())
			continue
		}
		op := kvOpNamePut
		if j := s.opIdx[in]; j >= 0 {
			b, _ := fieldBytes(s.vals, j)
			switch o := strings.ToLower(string(b)); o {
			case "", kvOpNamePut:
			case kvOpNameDelete, "del":
				op = kvOpNameDelete
			case kvOpNamePurge:
				op = kvOpNamePurge
			default:
				s.bad(out, rec.TupleID, fmt.Sprintf("op %q: want put, delete or purge", o))
				continue
			}
		}
		m := nats.NewMsg(s.prefix + string(key))
		switch op {
		case kvOpNamePut:
			if j := s.valIdx[in]; j >= 0 {
				m.Data, _ = fieldBytes(s.vals, j)
			} else {
				m.Data = appendJSONObject(nil, s.fields[in], s.vals)
			}
			s.puts++
		case kvOpNameDelete:
			m.Header.Set(kvOpHeader, kvOpDel)
			s.deletes++
		case kvOpNamePurge:
			m.Header.Set(kvOpHeader, kvOpPurge)
			m.Header.Set(kvRollupHeader, kvRollupSubj)
			s.deletes++
		}
		f, err := s.js.PublishMsgAsync(m)
		if err != nil {
			out.Fail(rec.TupleID)
			continue
		}
		s.ids, s.futures = append(s.ids, rec.TupleID), append(s.futures, f)
	}
	if s.puts > 0 {
		s.metric("kv_puts", s.puts)
	}
	if s.deletes > 0 {
		s.metric("kv_deletes", s.deletes)
	}
	s.puts, s.deletes = 0, 0
	// Ack each tuple once the bucket stored its write; fail it otherwise
	// (a bucket past its size refuses puts).
	timer := time.NewTimer(s.timeout)
	defer timer.Stop()
	for i, f := range s.futures {
		select {
		case <-f.Ok():
			out.Ack(s.ids[i])
		case <-f.Err():
			out.Fail(s.ids[i])
			s.metric("kv_errors", 1)
		case <-timer.C:
			for _, id := range s.ids[i:] {
				out.Fail(id)
			}
			s.metric("kv_errors", int64(len(s.ids)-i))
			return nil
		}
	}
	return nil
}

func (s *kvSink) Tick(context.Context, plugin.Collector) error   { return nil }
func (s *kvSink) Finish(context.Context, plugin.Collector) error { return nil }

func (s *kvSink) Close(ctx context.Context) error {
	if s.js != nil {
		// The container's connection stays: drop this sink's reply
		// subscription and pending acks from it.
		s.js.CleanupPublisher()
		s.js = nil
	}
	return nil
}
