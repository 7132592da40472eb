package tuple

// The shared, language-neutral test vectors in wasm-sdk/testdata are
// generated from the tables in vectors_gen_test.go with this codec:
//
//	go test ./internal/tuple -run TestVectors -update
//
// Without -update the test (1) checks that the files are exactly what the
// tables produce and (2) parses every line on its own, the way another SDK
// would, and checks it against this codec in both directions.

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite wasm-sdk/testdata from the Go codec")

const vectorDir = "../../../testdata"

// vectorFiles lists every generated file and its generator.
var vectorFiles = []struct {
	name string
	gen  func() string
}{
	{"values.txt", genValuesFile},
	{"batch.txt", genBatchFile},
	{"ops.txt", genOpsFile},
	{"context.txt", genContextFile},
	{"msgids.txt", genMsgIDsFile},
	{"hash.txt", genHashFile},
	{"invalid.txt", genInvalidFile},
}

func TestVectors(t *testing.T) {
	for _, f := range vectorFiles {
		path := filepath.Join(vectorDir, f.name)
		want := f.gen()
		if *update {
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (generate the vectors with: go test ./internal/tuple -run TestVectors -update)", err)
		}
		if string(got) != want {
			t.Errorf("%s is out of date with the generator tables; run go test ./internal/tuple -run TestVectors -update", path)
		}
	}
}

// vectorLines returns the tab-separated columns of every data line of a file.
func vectorLines(t *testing.T, name string) [][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(vectorDir, name))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	for _, l := range strings.Split(string(b), "\n") {
		if l == "" || l[0] == '#' {
			continue
		}
		out = append(out, strings.Split(l, "\t"))
	}
	if len(out) == 0 {
		t.Fatalf("%s: no vectors", name)
	}
	return out
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex %.40q: %v", s, err)
	}
	return b
}

// parseSpec parses a values spec ("-" or space-separated typed tokens).
func parseSpec(t *testing.T, spec string) []Value {
	t.Helper()
	if spec == "-" {
		return nil
	}
	var vals []Value
	for _, tok := range strings.Split(spec, " ") {
		k, arg, ok := strings.Cut(tok, ":")
		if !ok {
			t.Fatalf("bad spec token %q", tok)
		}
		switch k {
		case "n":
			vals = append(vals, NullValue())
		case "s":
			vals = append(vals, Value{Kind: String, B: mustHex(t, arg)})
		case "x":
			vals = append(vals, Bin(mustHex(t, arg)))
		case "i":
			i, err := strconv.ParseInt(arg, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			vals = append(vals, Int(i))
		case "f":
			f, err := strconv.ParseFloat(arg, 64)
			if err != nil {
				t.Fatal(err)
			}
			vals = append(vals, Float(f))
		case "b":
			if arg != "0" && arg != "1" {
				t.Fatalf("bad bool %q", arg)
			}
			vals = append(vals, Boolean(arg == "1"))
		default:
			t.Fatalf("bad spec kind %q", k)
		}
	}
	return vals
}

// sameValues compares decoded values, floats bit for bit, nil == empty.
func sameValues(a, b []Value) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Kind != y.Kind || x.I != y.I || math.Float64bits(x.F) != math.Float64bits(y.F) || !bytes.Equal(x.B, y.B) {
			return false
		}
	}
	return true
}

// decodeExact decodes a values block that must span all of src.
func decodeExact(src []byte) ([]Value, error) {
	vals, n, err := DecodeValues(nil, src)
	if err != nil {
		return nil, err
	}
	if n != len(src) {
		return nil, fmt.Errorf("%d trailing bytes after values", len(src)-n)
	}
	return vals, nil
}

func TestVectorValues(t *testing.T) {
	for _, l := range vectorLines(t, "values.txt") {
		name, spec, enc := l[0], parseSpec(t, l[1]), mustHex(t, l[2])
		if got := AppendValues(nil, spec...); !bytes.Equal(got, enc) {
			t.Errorf("%s: encode = %x, want %x", name, got, enc)
		}
		got, err := decodeExact(enc)
		if err != nil || !sameValues(got, spec) {
			t.Errorf("%s: decode = %v, %v", name, got, err)
		}
		spans, n, err := FieldSpans(nil, enc)
		if err != nil || n != len(enc) || len(spans) != 2*len(spec) {
			t.Errorf("%s: FieldSpans = %d spans, %d, %v", name, len(spans), n, err)
		}
	}
}

type specRecord struct {
	input  uint16
	source uint32
	id     uint64
	vals   []Value
}

func parseRecords(t *testing.T, s string) []specRecord {
	t.Helper()
	if s == "-" {
		return nil
	}
	var out []specRecord
	for _, r := range strings.Split(s, "|") {
		p := strings.SplitN(r, ",", 4)
		if len(p) != 4 {
			t.Fatalf("bad record %q", r)
		}
		out = append(out, specRecord{
			input:  uint16(mustUint(t, p[0], 16)),
			source: uint32(mustUint(t, p[1], 32)),
			id:     mustUint(t, p[2], 64),
			vals:   parseSpec(t, p[3]),
		})
	}
	return out
}

func mustUint(t *testing.T, s string, bits int) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(s, 10, bits)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestVectorBatch(t *testing.T) {
	for _, l := range vectorLines(t, "batch.txt") {
		name, recs, enc := l[0], parseRecords(t, l[1]), mustHex(t, l[2])
		var w BatchWriter
		w.Reset()
		for _, r := range recs {
			w.Append(r.input, r.source, r.id, AppendValues(nil, r.vals...))
		}
		if !bytes.Equal(w.Buf, enc) {
			t.Errorf("%s: BatchWriter differs from vector", name)
		}
		br, err := NewBatchReader(enc)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if br.Count() != len(recs) {
			t.Errorf("%s: count %d, want %d", name, br.Count(), len(recs))
		}
		for i := 0; ; i++ {
			rec, ok, err := br.Next()
			if err != nil {
				t.Fatalf("%s: record %d: %v", name, i, err)
			}
			if !ok {
				if i != len(recs) {
					t.Errorf("%s: %d records, want %d", name, i, len(recs))
				}
				break
			}
			vals, err := decodeExact(rec.Values)
			want := recs[i]
			if err != nil || rec.Input != want.input || rec.SourceTask != want.source || rec.TupleID != want.id || !sameValues(vals, want.vals) {
				t.Errorf("%s: record %d = %+v %v %v", name, i, rec, vals, err)
			}
		}
	}
}

type specOp struct {
	code    uint8
	stream  uint16
	direct  uint32
	msgID   uint64 // emit: message id; ack/fail: tuple id
	anchors []uint64
	vals    []Value
}

func parseOps(t *testing.T, s string) []specOp {
	t.Helper()
	var out []specOp
	for _, o := range strings.Split(s, "|") {
		p := strings.SplitN(o, ",", 6)
		switch {
		case p[0] == "ack" && len(p) == 2:
			out = append(out, specOp{code: OpAck, msgID: mustUint(t, p[1], 64)})
		case p[0] == "fail" && len(p) == 2:
			out = append(out, specOp{code: OpFail, msgID: mustUint(t, p[1], 64)})
		case p[0] == "emit" && len(p) == 6:
			op := specOp{code: OpEmit, stream: uint16(mustUint(t, p[1], 16)), direct: uint32(mustUint(t, p[2], 32)),
				msgID: mustUint(t, p[3], 64), vals: parseSpec(t, p[5])}
			if p[4] != "-" {
				for _, a := range strings.Split(p[4], ":") {
					op.anchors = append(op.anchors, mustUint(t, a, 64))
				}
			}
			out = append(out, op)
		default:
			t.Fatalf("bad op %q", o)
		}
	}
	return out
}

func TestVectorOps(t *testing.T) {
	for _, l := range vectorLines(t, "ops.txt") {
		name, ops, enc := l[0], parseOps(t, l[1]), mustHex(t, l[2])
		var buf []byte
		for _, o := range ops {
			switch o.code {
			case OpEmit:
				buf = AppendEmit(buf, o.stream, o.direct, o.msgID, o.anchors, AppendValues(nil, o.vals...))
			case OpAck:
				buf = AppendAck(buf, o.msgID)
			case OpFail:
				buf = AppendFail(buf, o.msgID)
			}
		}
		if !bytes.Equal(buf, enc) {
			t.Errorf("%s: encode = %x, want %x", name, buf, enc)
		}
		var spans []int
		off := 0
		for i, want := range ops {
			var op Op
			var err error
			op, off, spans, err = NextOp(enc, off, spans)
			if err != nil {
				t.Fatalf("%s: op %d: %v", name, i, err)
			}
			var anchors []uint64
			for a := 0; a < len(op.Anchors); a += 8 {
				anchors = append(anchors, binary.LittleEndian.Uint64(op.Anchors[a:]))
			}
			vals, err := decodeExact(op.Values)
			if op.Code != want.code || op.MsgID != want.msgID || (op.Code == OpEmit && (err != nil ||
				op.Stream != want.stream || op.Direct != want.direct || !slices.Equal(anchors, want.anchors) || !sameValues(vals, want.vals))) {
				t.Errorf("%s: op %d = %+v, want %+v", name, i, op, want)
			}
		}
		if off != len(enc) {
			t.Errorf("%s: %d trailing bytes", name, len(enc)-off)
		}
	}
}

func hexStr(t *testing.T, s string) string { return string(mustHex(t, s)) }

// parseNames parses "-" or ":"-separated hex names.
func parseNames(t *testing.T, s string) []string {
	var out []string
	for _, n := range strings.Split(s, ":") {
		out = append(out, hexStr(t, n))
	}
	return out
}

func parseContextLine(t *testing.T, l []string) Context {
	t.Helper()
	if len(l) != 10 {
		t.Fatalf("context line has %d columns, want 10", len(l))
	}
	c := Context{
		Topology:    hexStr(t, l[1]),
		Component:   hexStr(t, l[2]),
		TaskID:      uint32(mustUint(t, l[3], 32)),
		TaskIndex:   uint32(mustUint(t, l[4], 32)),
		Parallelism: uint32(mustUint(t, l[5], 32)),
		Config:      map[string]string{},
	}
	if l[6] != "-" {
		for _, kv := range strings.Split(l[6], ",") {
			k, v, _ := strings.Cut(kv, "=")
			c.Config[hexStr(t, k)] = hexStr(t, v)
		}
	}
	if l[7] != "-" {
		for _, o := range strings.Split(l[7], ",") {
			n := parseNames(t, o)
			c.Outputs = append(c.Outputs, StreamDecl{Name: n[0], Fields: n[1:]})
		}
	}
	if l[8] != "-" {
		for _, in := range strings.Split(l[8], ",") {
			n := parseNames(t, in)
			c.Inputs = append(c.Inputs, InputDecl{Component: n[0], Stream: n[1], Fields: n[2:]})
		}
	}
	return c
}

func sameContext(a, b Context) bool {
	eqDecl := func(x, y []string) bool { return len(x) == len(y) && (len(x) == 0 || slices.Equal(x, y)) }
	if a.Topology != b.Topology || a.Component != b.Component || a.TaskID != b.TaskID ||
		a.TaskIndex != b.TaskIndex || a.Parallelism != b.Parallelism || len(a.Config) != len(b.Config) ||
		len(a.Outputs) != len(b.Outputs) || len(a.Inputs) != len(b.Inputs) {
		return false
	}
	for k, v := range a.Config {
		if w, ok := b.Config[k]; !ok || w != v {
			return false
		}
	}
	for i := range a.Outputs {
		if a.Outputs[i].Name != b.Outputs[i].Name || !eqDecl(a.Outputs[i].Fields, b.Outputs[i].Fields) {
			return false
		}
	}
	for i := range a.Inputs {
		x, y := a.Inputs[i], b.Inputs[i]
		if x.Component != y.Component || x.Stream != y.Stream || !eqDecl(x.Fields, y.Fields) {
			return false
		}
	}
	return true
}

func TestVectorContext(t *testing.T) {
	for _, l := range vectorLines(t, "context.txt") {
		name, want, enc := l[0], parseContextLine(t, l), mustHex(t, l[9])
		if got := want.Encode(nil); !bytes.Equal(got, enc) {
			t.Errorf("%s: encode = %x, want %x", name, got, enc)
		}
		got, err := DecodeContext(enc)
		if err != nil || !sameContext(got, want) {
			t.Errorf("%s: decode = %+v, %v", name, got, err)
		}
	}
}

func parseIDs(t *testing.T, s string) []uint64 {
	if s == "-" {
		return nil
	}
	var ids []uint64
	for _, f := range strings.Split(s, ",") {
		ids = append(ids, mustUint(t, f, 64))
	}
	return ids
}

// decodeMsgIDs decodes the ack/fail payload "u32 count, u64 msgid*".
func decodeMsgIDs(b []byte) ([]uint64, error) {
	if len(b) < 4 {
		return nil, ErrShort
	}
	n := uint64(binary.LittleEndian.Uint32(b))
	if uint64(len(b)-4) != 8*n {
		return nil, fmt.Errorf("msgids: %d ids need %d bytes, have %d", n, 8*n, len(b)-4)
	}
	var ids []uint64
	for i := 4; i < len(b); i += 8 {
		ids = append(ids, binary.LittleEndian.Uint64(b[i:]))
	}
	return ids, nil
}

func TestVectorMsgIDs(t *testing.T) {
	for _, l := range vectorLines(t, "msgids.txt") {
		name, want, enc := l[0], parseIDs(t, l[1]), mustHex(t, l[2])
		if got := encodeMsgIDs(want); !bytes.Equal(got, enc) {
			t.Errorf("%s: encode = %x, want %x", name, got, enc)
		}
		got, err := decodeMsgIDs(enc)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: decode = %v, %v", name, got, err)
		}
	}
}

func TestVectorHash(t *testing.T) {
	for _, l := range vectorLines(t, "hash.txt") {
		var h uint64
		var res []string // hash, key group, task indexes
		switch {
		case l[0] == "tuple" && len(l) == 9:
			enc := AppendValues(nil, parseSpec(t, l[2])...)
			spans, _, err := FieldSpans(nil, enc)
			if err != nil {
				t.Fatal(err)
			}
			var idx []int
			for _, f := range strings.Split(l[3], ",") {
				idx = append(idx, int(mustUint(t, f, 16)))
			}
			h, res = HashFields(enc, spans, idx), l[4:7]
			// The ABI's state key for these fields: payloads joined by 0x00.
			var key []byte
			for i, f := range idx {
				if i > 0 {
					key = append(key, 0)
				}
				key = append(key, enc[spans[2*f]:spans[2*f+1]]...)
			}
			if !bytes.Equal(key, mustHex(t, l[7])) {
				t.Errorf("tuple %s: state key %x, want %s", l[1], key, l[7])
			}
			kh := StateKeyHash(key)
			if fmt.Sprintf("%016x", kh) != l[8] {
				t.Errorf("tuple %s: state key hash %016x, want %s", l[1], kh, l[8])
			}
			if bytes.IndexByte(key, 0x1F) < 0 && kh != h {
				t.Errorf("tuple %s: state key hash differs from the tuple hash", l[1])
			}
		case l[0] == "key" && len(l) == 6:
			h, res = StateKeyHash(mustHex(t, l[2])), l[3:6]
		default:
			t.Fatalf("bad hash line %q", l)
		}
		name := l[0] + " " + l[1]
		if got := fmt.Sprintf("%016x", h); got != res[0] {
			t.Errorf("%s: hash %s, want %s", name, got, res[0])
		}
		if got := strconv.Itoa(KeyGroup(h, DefaultMaxKeyGroups)); got != res[1] {
			t.Errorf("%s: key group %s, want %s", name, got, res[1])
		}
		if got := taskIndexes(h); got != res[2] {
			t.Errorf("%s: task indexes %s, want %s", name, got, res[2])
		}
	}
}

// validate decodes src as kind and returns the first error.
func validate(kind string, src []byte) error {
	switch kind {
	case "values":
		_, err := decodeExact(src)
		return err
	case "batch":
		br, err := NewBatchReader(src)
		if err != nil {
			return err
		}
		for {
			rec, ok, err := br.Next()
			if err != nil || !ok {
				return err
			}
			if _, err := decodeExact(rec.Values); err != nil {
				return err
			}
		}
	case "ops":
		var spans []int
		for off := 0; off < len(src); {
			var op Op
			var err error
			if op, off, spans, err = NextOp(src, off, spans); err != nil {
				return err
			}
			if op.Code == OpEmit {
				// NextOp uses FieldSpans, which does not check bool payloads.
				if _, err := decodeExact(op.Values); err != nil {
					return err
				}
			}
		}
		return nil
	case "context":
		_, err := DecodeContext(src)
		return err
	case "msgids":
		_, err := decodeMsgIDs(src)
		return err
	}
	return fmt.Errorf("unknown kind %q", kind)
}

func TestVectorInvalid(t *testing.T) {
	for _, l := range vectorLines(t, "invalid.txt") {
		if err := validate(l[1], mustHex(t, l[2])); err == nil {
			t.Errorf("%s (%s): accepted, want an error", l[0], l[1])
		}
	}
}
