package ardea

// The SDK against the shared vectors in wasm-sdk/testdata (formats in its
// README.md): everything the SDK encodes must equal the vectors' bytes and
// everything it decodes must equal their specs.

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea/wasm-sdk/go/internal/tuple"
)

const vectorDir = "../testdata"

func readVectors(t *testing.T, name string) [][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(vectorDir, name))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" && l[0] != '#' {
			out = append(out, strings.Split(l, "\t"))
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no vectors", name)
	}
	return out
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func parseUint(t *testing.T, s string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// parseSpec parses a values spec into tuple values.
func parseSpec(t *testing.T, spec string) []tuple.Value {
	t.Helper()
	if spec == "-" {
		return nil
	}
	var out []tuple.Value
	for _, tok := range strings.Split(spec, " ") {
		k, arg, _ := strings.Cut(tok, ":")
		switch k {
		case "n":
			out = append(out, tuple.NullValue())
		case "s":
			out = append(out, tuple.Value{Kind: tuple.String, B: unhex(t, arg)})
		case "x":
			out = append(out, tuple.Bin(unhex(t, arg)))
		case "i":
			i, err := strconv.ParseInt(arg, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, tuple.Int(i))
		case "f":
			f, err := strconv.ParseFloat(arg, 64)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, tuple.Float(f))
		case "b":
			out = append(out, tuple.Boolean(arg == "1"))
		default:
			t.Fatalf("bad spec token %q", tok)
		}
	}
	return out
}

// anyValues converts spec values to what the SDK's Emit takes.
func anyValues(vals []tuple.Value) []any {
	out := make([]any, len(vals))
	for i, v := range vals {
		switch v.Kind {
		case tuple.String:
			out[i] = string(v.B)
		case tuple.Bytes:
			out[i] = v.B
		case tuple.Int64:
			out[i] = v.I
		case tuple.Float64:
			out[i] = v.F
		case tuple.Bool:
			out[i] = v.I == 1
		}
	}
	return out
}

// checkTuple compares a tuple's accessors with spec values.
func checkTuple(t *testing.T, name string, tp Tuple, want []tuple.Value) {
	t.Helper()
	if tp.Len() != len(want) {
		t.Fatalf("%s: %d fields, want %d", name, tp.Len(), len(want))
	}
	for i, v := range want {
		ok := tp.Kind(i) == v.Kind
		switch v.Kind {
		case tuple.Null:
			ok = ok && tp.IsNull(i)
		case tuple.String:
			ok = ok && tp.String(i) == string(v.B)
		case tuple.Bytes:
			ok = ok && bytes.Equal(tp.Bytes(i), v.B) && bytes.Equal(tp.BytesView(i), v.B)
		case tuple.Int64:
			ok = ok && tp.Int(i) == v.I
		case tuple.Float64:
			ok = ok && math.Float64bits(tp.Float(i)) == math.Float64bits(v.F)
		case tuple.Bool:
			ok = ok && tp.Bool(i) == (v.I == 1)
		}
		if !ok {
			t.Errorf("%s: field %d = %v, want %+v", name, i, tp.Value(i), v)
		}
	}
}

func fieldNames(n int) []string {
	f := make([]string, n)
	for i := range f {
		f[i] = "f" + strconv.Itoa(i)
	}
	return f
}

func TestVectorsValues(t *testing.T) {
	for _, l := range readVectors(t, "values.txt") {
		name, vals, enc := l[0], parseSpec(t, l[1]), unhex(t, l[2])
		// Encoding: the SDK's field encoder.
		b := binary.LittleEndian.AppendUint16(nil, uint16(len(vals)))
		for i, v := range anyValues(vals) {
			var ok bool
			if b, ok = appendField(b, v); !ok {
				t.Fatalf("%s: field %d rejected", name, i)
			}
		}
		if !bytes.Equal(b, enc) {
			t.Errorf("%s: SDK encoding differs", name)
		}
		// Decoding, then re-emitting, through the runtime.
		ctx := wordContext()
		ctx.Inputs[0].Fields = fieldNames(len(vals))
		ctx.Outputs[0].Fields = fieldNames(len(vals))
		x := newHarness(t, nil, &funcBolt{exec: func(tp Tuple, c *BoltCollector) error {
			checkTuple(t, name, tp, vals)
			c.Emit(tp.Values()...)
			return nil
		}})
		x.prepare(ctx)
		var w tuple.BatchWriter
		w.Reset()
		w.Append(0, 1, 0, enc)
		x.mustOK(x.execute(w.Buf), 0, name)
		if ops := x.h.ops(); len(ops) != 1 || !bytes.Equal(ops[0].Values, enc) {
			t.Errorf("%s: re-emitted values differ", name)
		}
	}
}

func TestVectorsBatch(t *testing.T) {
	for _, l := range readVectors(t, "batch.txt") {
		name, enc := l[0], unhex(t, l[2])
		type rec struct {
			input  int
			source uint32
			id     uint64
			vals   []tuple.Value
		}
		var want []rec
		if l[1] != "-" {
			for _, r := range strings.Split(l[1], "|") {
				p := strings.SplitN(r, ",", 4)
				want = append(want, rec{int(parseUint(t, p[0])), uint32(parseUint(t, p[1])), parseUint(t, p[2]), parseSpec(t, p[3])})
			}
		}
		ctx := wordContext()
		ctx.Inputs = append(ctx.Inputs, tuple.InputDecl{Component: "c2", Stream: "s2"}, tuple.InputDecl{Component: "c3", Stream: "s3"})
		i := 0
		x := newHarness(t, nil, &funcBolt{exec: func(tp Tuple, c *BoltCollector) error {
			if i >= len(want) {
				t.Fatalf("%s: more than %d records", name, len(want))
			}
			w := want[i]
			if tp.Input() != w.input || tp.SourceTask() != w.source || tp.ID() != w.id ||
				tp.Component() != ctx.Inputs[w.input].Component || !bytes.Equal(tp.Raw(), tuple.AppendValues(nil, w.vals...)) {
				t.Errorf("%s: record %d: input %d source %d id %d", name, i, tp.Input(), tp.SourceTask(), tp.ID())
			}
			checkTuple(t, name, tp, w.vals)
			i++
			return nil
		}})
		x.prepare(ctx)
		x.mustOK(x.execute(enc), 0, name)
		if i != len(want) {
			t.Errorf("%s: %d records, want %d", name, i, len(want))
		}
	}
}

type vecOp struct {
	code    string
	stream  int
	direct  uint32
	msgID   uint64
	anchors []Tuple
	vals    []any
}

func TestVectorsOps(t *testing.T) {
	for _, l := range readVectors(t, "ops.txt") {
		name, enc := l[0], unhex(t, l[2])
		var ops []vecOp
		nfields := map[int]int{}
		spout := true
		for _, o := range strings.Split(l[1], "|") {
			p := strings.SplitN(o, ",", 6)
			op := vecOp{code: p[0]}
			if p[0] != "emit" {
				op.msgID, spout = parseUint(t, p[1]), false
				ops = append(ops, op)
				continue
			}
			op.stream, op.direct, op.msgID = int(parseUint(t, p[1])), uint32(parseUint(t, p[2])), parseUint(t, p[3])
			if p[4] != "-" {
				spout = false
				for _, a := range strings.Split(p[4], ":") {
					op.anchors = append(op.anchors, Tuple{id: parseUint(t, a)})
				}
			}
			op.vals = anyValues(parseSpec(t, p[5]))
			nfields[op.stream] = len(op.vals)
			ops = append(ops, op)
		}
		ctx := wordContext()
		ctx.Outputs = nil
		maxStream := 0
		for s := range nfields {
			maxStream = max(maxStream, s)
		}
		for s := 0; s <= maxStream; s++ {
			ctx.Outputs = append(ctx.Outputs, tuple.StreamDecl{Name: "s" + strconv.Itoa(s), Fields: fieldNames(nfields[s])})
		}
		var x *harness
		if spout {
			x = newHarness(t, &funcSpout{next: func(c *SpoutCollector) (Status, error) {
				for _, o := range ops {
					stream := "s" + strconv.Itoa(o.stream)
					if o.direct != tuple.NoTask {
						c.EmitDirectWithID(o.direct, stream, o.msgID, o.vals...)
					} else {
						c.EmitToWithID(stream, o.msgID, o.vals...)
					}
				}
				return Done, nil
			}}, nil)
			x.open(ctx)
			x.mustOK(x.r.next(1000), int32(Done), name)
		} else {
			x = newHarness(t, nil, &funcBolt{exec: func(tp Tuple, c *BoltCollector) error {
				for _, o := range ops {
					stream := "s" + strconv.Itoa(o.stream)
					switch {
					case o.code == "ack":
						c.Ack(Tuple{id: o.msgID})
					case o.code == "fail":
						c.Fail(Tuple{id: o.msgID})
					case o.direct != tuple.NoTask:
						c.EmitDirectAnchored(o.direct, stream, o.anchors, o.vals...)
					default:
						c.EmitMultiAnchored(stream, o.anchors, o.vals...)
					}
				}
				return nil
			}})
			x.prepare(ctx)
			x.mustOK(x.execute(batchOf(nil)), 0, name)
		}
		if got := x.h.AllEmitted(); !bytes.Equal(got, enc) {
			t.Errorf("%s: emitted\n%x\nwant\n%x", name, got, enc)
		}
	}
}

func TestVectorsContext(t *testing.T) {
	for _, l := range readVectors(t, "context.txt") {
		name := l[0]
		var got *Context
		x := newHarness(t, nil, &funcBolt{prepare: func(c *Context) error { got = c; return nil }})
		x.mustOK(x.r.prepare(x.put(unhex(t, l[9]))), 0, name)
		h := func(s string) string { return string(unhex(t, s)) }
		if got.Topology() != h(l[1]) || got.Component() != h(l[2]) || fmt.Sprint(got.TaskID()) != l[3] ||
			fmt.Sprint(got.TaskIndex()) != l[4] || fmt.Sprint(got.Parallelism()) != l[5] {
			t.Errorf("%s: header", name)
		}
		var cfg []string
		for _, k := range got.ConfigKeys() {
			v, _ := got.Config(k)
			cfg = append(cfg, hex.EncodeToString([]byte(k))+"="+hex.EncodeToString([]byte(v)))
		}
		names := func(ns ...string) string {
			for i, n := range ns {
				ns[i] = hex.EncodeToString([]byte(n))
			}
			return strings.Join(ns, ":")
		}
		var outs, ins []string
		for _, o := range got.Outputs() {
			outs = append(outs, names(append([]string{o.Name}, o.Fields...)...))
		}
		for _, in := range got.Inputs() {
			ins = append(ins, names(append([]string{in.Component, in.Stream}, in.Fields...)...))
		}
		orDash := func(s []string) string {
			if len(s) == 0 {
				return "-"
			}
			return strings.Join(s, ",")
		}
		if orDash(cfg) != l[6] || orDash(outs) != l[7] || orDash(ins) != l[8] {
			t.Errorf("%s: config/outputs/inputs\n%s\n%s\n%s", name, orDash(cfg), orDash(outs), orDash(ins))
		}
	}
}

// funcSpout adapts functions to a Spout.
type funcSpout struct {
	BaseSpout
	next       func(*SpoutCollector) (Status, error)
	ack, fail  func(uint64)
	activate   func(bool)
	openCalled bool
}

func (s *funcSpout) Open(*Context) error                    { s.openCalled = true; return nil }
func (s *funcSpout) Next(c *SpoutCollector) (Status, error) { return s.next(c) }
func (s *funcSpout) Ack(id uint64)                          { s.ack(id) }
func (s *funcSpout) Fail(id uint64)                         { s.fail(id) }
func (s *funcSpout) Activate()                              { s.activate(true) }
func (s *funcSpout) Deactivate()                            { s.activate(false) }

func TestVectorsMsgIDs(t *testing.T) {
	for _, l := range readVectors(t, "msgids.txt") {
		var want []uint64
		if l[1] != "-" {
			for _, s := range strings.Split(l[1], ",") {
				want = append(want, parseUint(t, s))
			}
		}
		var acked, failed []uint64
		sp := &funcSpout{ack: func(id uint64) { acked = append(acked, id) }, fail: func(id uint64) { failed = append(failed, id) }}
		x := newHarness(t, sp, nil)
		x.open(wordContext("word"))
		enc := unhex(t, l[2])
		x.mustOK(x.r.ackFailIDs(x.put(enc), false), 0, l[0])
		x.mustOK(x.r.ackFailIDs(x.put(enc), true), 0, l[0])
		if !slices.Equal(acked, want) || !slices.Equal(failed, want) {
			t.Errorf("%s: acked %v failed %v, want %v", l[0], acked, failed, want)
		}
	}
}

func TestVectorsInvalid(t *testing.T) {
	n := 0
	for _, l := range readVectors(t, "invalid.txt") {
		name, kind, src := l[0], l[1], unhex(t, l[2])
		var code int32
		switch kind {
		case "values":
			x := newHarness(t, nil, &BaseBolt{})
			x.prepare(wordContext("word"))
			var w tuple.BatchWriter
			w.Reset()
			w.Append(0, 1, 0, src)
			code = x.execute(w.Buf)
		case "batch":
			x := newHarness(t, nil, &BaseBolt{})
			x.prepare(wordContext("word"))
			code = x.execute(src)
		case "context":
			x := newHarness(t, nil, &BaseBolt{})
			code = x.r.prepare(x.put(src))
		case "msgids":
			x := newHarness(t, &funcSpout{ack: func(uint64) {}}, nil)
			x.open(wordContext("word"))
			code = x.r.ackFailIDs(x.put(src), false)
		default:
			continue // ops are decoded by the host, not the SDK
		}
		n++
		if code >= 0 {
			t.Errorf("%s (%s): accepted", name, kind)
		}
	}
	if n == 0 {
		t.Fatal("no invalid vectors checked")
	}
}
