package tuple

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"slices"
	"testing"
)

func TestValuesRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		vals []Value
		size int // encoded size
	}{
		{"empty", nil, 2},
		{"null", []Value{NullValue()}, 3},
		{"string", []Value{Str("héllo")}, 2 + 5 + 6},
		{"empty string", []Value{Str("")}, 2 + 5},
		{"bytes", []Value{Bin([]byte{0, 0xff})}, 2 + 5 + 2},
		{"int extremes", []Value{Int(math.MinInt64), Int(math.MaxInt64), Int(0)}, 2 + 27},
		{"floats", []Value{Float(math.Copysign(0, -1)), Float(math.Inf(1)), Float(math.SmallestNonzeroFloat64), Float(math.MaxFloat64)}, 2 + 36},
		{"bools", []Value{Boolean(true), Boolean(false)}, 2 + 4},
		{"mixed", []Value{Str("w"), Int(3), NullValue(), Bin(nil), Float(1.5), Boolean(true)}, 2 + 6 + 9 + 1 + 5 + 9 + 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			enc := AppendValues([]byte("prefix"), c.vals...)
			if !bytes.HasPrefix(enc, []byte("prefix")) {
				t.Fatal("AppendValues did not append")
			}
			enc = enc[6:]
			if len(enc) != c.size {
				t.Errorf("size %d, want %d", len(enc), c.size)
			}
			got, n, err := DecodeValues(nil, append(slices.Clone(enc), 0xAA))
			if err != nil || n != len(enc) || !sameValues(got, c.vals) {
				t.Fatalf("decode = %v, %d, %v", got, n, err)
			}
			spans, n, err := FieldSpans(nil, enc)
			if err != nil || n != len(enc) || len(spans) != 2*len(c.vals) {
				t.Fatalf("FieldSpans = %v, %d, %v", spans, n, err)
			}
			for i, v := range c.vals {
				if v.Kind == String || v.Kind == Bytes {
					if p := enc[spans[2*i]:spans[2*i+1]]; !bytes.Equal(p, v.B) {
						t.Errorf("field %d payload %x, want %x", i, p, v.B)
					}
				}
			}
		})
	}
}

func TestDecodeValueErrors(t *testing.T) {
	if _, _, err := DecodeValues(nil, []byte{1, 0, 6}); !errors.Is(err, ErrBadKind) {
		t.Errorf("bad tag: %v", err)
	}
	if _, _, err := DecodeValues(nil, []byte{1, 0, 3, 1}); !errors.Is(err, ErrShort) {
		t.Errorf("short int: %v", err)
	}
	if _, _, err := DecodeValues(nil, []byte{1, 0, 5, 2}); err == nil {
		t.Error("bool 2 accepted")
	}
}

func TestBatchRoundTrip(t *testing.T) {
	var w BatchWriter
	w.Reset()
	recs := []Record{
		{Input: 0, SourceTask: 1, TupleID: 0, Values: AppendValues(nil, Str("a b"))},
		{Input: 3, SourceTask: math.MaxUint32, TupleID: math.MaxUint64, Values: AppendValues(nil)},
	}
	for _, r := range recs {
		w.Append(r.Input, r.SourceTask, r.TupleID, r.Values)
	}
	first := slices.Clone(w.Buf)
	w.Reset() // reuse keeps working
	for _, r := range recs {
		w.Append(r.Input, r.SourceTask, r.TupleID, r.Values)
	}
	if !bytes.Equal(first, w.Buf) || w.Len() != len(w.Buf) || w.Count != 2 {
		t.Fatal("BatchWriter reuse changed the encoding")
	}
	br, err := NewBatchReader(w.Buf)
	if err != nil || br.Count() != 2 {
		t.Fatal(br.Count(), err)
	}
	for i := 0; ; i++ {
		rec, ok, err := br.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			if i != 2 {
				t.Fatalf("%d records", i)
			}
			break
		}
		if !reflect.DeepEqual(rec, recs[i]) {
			t.Errorf("record %d = %+v, want %+v", i, rec, recs[i])
		}
	}
}

func TestOpsRoundTrip(t *testing.T) {
	vals := AppendValues(nil, Str("w"), Int(1))
	buf := AppendEmit(nil, 2, 9, 77, []uint64{1, 2}, vals)
	buf = AppendAck(buf, 5)
	buf = AppendFail(buf, 6)
	buf = AppendEmit(buf, 0, NoTask, 0, nil, AppendValues(nil))
	var spans []int
	var ops []Op
	for off := 0; off < len(buf); {
		var op Op
		var err error
		op, off, spans, err = NextOp(buf, off, spans)
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, op)
	}
	if len(ops) != 4 {
		t.Fatalf("%d ops", len(ops))
	}
	e := ops[0]
	if e.Code != OpEmit || e.Stream != 2 || e.Direct != 9 || e.MsgID != 77 || len(e.Anchors) != 16 ||
		binary.LittleEndian.Uint64(e.Anchors[8:]) != 2 || !bytes.Equal(e.Values, vals) {
		t.Errorf("emit = %+v", e)
	}
	if ops[1].Code != OpAck || ops[1].MsgID != 5 || ops[2].Code != OpFail || ops[2].MsgID != 6 {
		t.Errorf("ack/fail = %+v %+v", ops[1], ops[2])
	}
	if ops[3].Direct != NoTask || len(ops[3].Values) != 2 {
		t.Errorf("empty emit = %+v", ops[3])
	}
	if _, _, _, err := NextOp(buf, len(buf), nil); !errors.Is(err, ErrShort) {
		t.Errorf("past the end: %v", err)
	}
}

func TestContextRoundTrip(t *testing.T) {
	c := Context{
		Topology: "wc", Component: "count", TaskID: 4, TaskIndex: 1, Parallelism: 2,
		Config:  map[string]string{"b": "2", "a": "1", "": ""},
		Outputs: []StreamDecl{{Name: "default", Fields: []string{"word", "count"}}, {Name: "none"}},
		Inputs:  []InputDecl{{Component: "split", Stream: "default", Fields: []string{"word"}}},
	}
	enc := c.Encode(nil)
	got, err := DecodeContext(enc)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, c) {
		t.Errorf("decode = %+v, want %+v", got, c)
	}
	// Config is sorted by key: "" < "a" < "b".
	if i, j := bytes.Index(enc, []byte("\x01\x00\x00\x00a")), bytes.Index(enc, []byte("\x01\x00\x00\x00b")); i < 0 || i > j {
		t.Error("config not sorted by key")
	}
	if !bytes.Equal(got.Encode(nil), enc) {
		t.Error("re-encoding differs")
	}
}

func TestHashAndKeyGroups(t *testing.T) {
	vals := AppendValues(nil, Str("a"), Int(1), Str("b"))
	spans, _, _ := FieldSpans(nil, vals)
	want := HashBytes(HashSeed, []byte("a\x00b"))
	if h := HashFields(vals, spans, []int{0, 2}); h != want {
		t.Errorf("HashFields = %x, want %x", h, want)
	}
	if StateKeyHash([]byte("a\x00b\x1fsuffix")) != want || StateKeyHash([]byte("a\x00b")) != want {
		t.Error("state key hash does not match the tuple hash")
	}
	if HashBytes(HashSeed, nil) != 0xcbf29ce484222325 || HashBytes(HashSeed, []byte("a")) != 0xaf63dc4c8601ec8c {
		t.Error("not FNV-1a 64")
	}
	for p := 1; p <= DefaultMaxKeyGroups; p++ {
		prev := 0
		for kg := range DefaultMaxKeyGroups {
			ti := TaskIndexForKeyGroup(kg, DefaultMaxKeyGroups, p)
			if ti < prev || ti >= p {
				t.Fatalf("p=%d kg=%d: task index %d", p, kg, ti)
			}
			prev = ti
		}
		if prev != p-1 {
			t.Fatalf("p=%d: last task index %d", p, prev)
		}
	}
}

// FieldSpans (and so NextOp, which the host uses on every emit) must reject
// what DecodeValues rejects, so an invalid bool never reaches a stream.
func TestFieldSpansRejectsBadBool(t *testing.T) {
	vals := AppendValues(nil, Str("x"), Boolean(true))
	vals[len(vals)-1] = 2
	if _, _, err := FieldSpans(nil, vals); err == nil {
		t.Fatal("FieldSpans accepted a bool payload of 2")
	}
	if _, _, err := DecodeValues(nil, vals); err == nil {
		t.Fatal("DecodeValues accepted a bool payload of 2")
	}
	op := AppendEmit(nil, 0, NoTask, 0, nil, vals)
	if _, _, _, err := NextOp(op, 0, nil); err == nil {
		t.Fatal("NextOp accepted an emit with a bool payload of 2")
	}
}

// TestDecodeReusesOp: Decode into one Op gives each op exactly what NextOp
// gives, whatever the previous op left in it (spans only mean something
// for an emit).
func TestDecodeReusesOp(t *testing.T) {
	var buf []byte
	buf = AppendEmit(buf, 1, 5, 9, []uint64{7, 8}, AppendValues(nil, Str("a"), Int(2)))
	buf = append(buf, OpAck)
	buf = binary.LittleEndian.AppendUint64(buf, 42)
	buf = AppendEmit(buf, 0, NoTask, 0, nil, AppendValues(nil, Str("b")))
	var op Op
	var spans []int
	for off := 0; off < len(buf); {
		want, wnext, wspans, werr := NextOp(buf, off, nil)
		next, s, err := op.Decode(buf, off, spans)
		spans = s
		if err != nil || werr != nil || next != wnext || !reflect.DeepEqual(op, want) || (op.Code == OpEmit && !slices.Equal(spans, wspans)) {
			t.Fatalf("op at %d: Decode %+v %v %d %v, NextOp %+v %v %d %v", off, op, spans, next, err, want, wspans, wnext, werr)
		}
		off = next
	}
}
