package tuple

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"
)

// Seeds: the vector tables (small entries only) and a few invalid shapes.

func addSeed(f *testing.F, b []byte) {
	if len(b) <= 4096 {
		f.Add(b)
	}
}

func FuzzDecodeValues(f *testing.F) {
	for _, v := range valuesTable() {
		addSeed(f, AppendValues(nil, v.vals...))
	}
	f.Add([]byte{1, 0, 5, 2})
	f.Add([]byte{1, 0, 2, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, src []byte) {
		vals, n, err := DecodeValues(nil, src)
		spans, sn, serr := FieldSpans(nil, src)
		if err != nil {
			return
		}
		if n > len(src) {
			t.Fatalf("consumed %d of %d", n, len(src))
		}
		// Round trip: re-encoding the decoded values gives the same bytes.
		if enc := AppendValues(nil, vals...); !bytes.Equal(enc, src[:n]) {
			t.Fatalf("re-encoding %x gives %x", src[:n], enc)
		}
		// FieldSpans accepts whatever DecodeValues accepts, with equal length.
		if serr != nil || sn != n || len(spans) != 2*len(vals) {
			t.Fatalf("FieldSpans = %d spans, %d, %v; DecodeValues %d fields, %d", len(spans), sn, serr, len(vals), n)
		}
	})
}

func FuzzBatchReader(f *testing.F) {
	for _, b := range batchTable() {
		var w BatchWriter
		w.Reset()
		for _, r := range b.recs {
			w.Append(r.input, r.source, r.id, AppendValues(nil, r.vals...))
		}
		addSeed(f, w.Buf)
	}
	f.Add([]byte{1, 0, 0, 0, 13, 0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, src []byte) {
		br, err := NewBatchReader(src)
		if err != nil {
			return
		}
		var w BatchWriter
		w.Reset()
		for i := 0; ; i++ {
			rec, ok, err := br.Next()
			if err != nil {
				return
			}
			if !ok {
				break
			}
			if i >= len(src) {
				t.Fatal("more records than bytes")
			}
			w.Append(rec.Input, rec.SourceTask, rec.TupleID, rec.Values)
		}
		// A fully read batch re-encodes to the same bytes.
		if !bytes.Equal(w.Buf, src) {
			t.Fatalf("re-encoding %x gives %x", src, w.Buf)
		}
	})
}

func FuzzNextOp(f *testing.F) {
	for _, o := range opsTable() {
		var buf []byte
		for _, op := range o.ops {
			switch op.code {
			case OpEmit:
				buf = AppendEmit(buf, op.stream, op.direct, op.msgID, op.anchors, AppendValues(nil, op.vals...))
			case OpAck:
				buf = AppendAck(buf, op.msgID)
			default:
				buf = AppendFail(buf, op.msgID)
			}
		}
		addSeed(f, buf)
	}
	f.Add([]byte{1, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, src []byte) {
		var spans []int
		var out []byte
		for off := 0; off < len(src); {
			op, next, sp, err := NextOp(src, off, spans)
			spans = sp
			if err != nil {
				return
			}
			if next <= off || next > len(src) {
				t.Fatalf("op at %d: next offset %d of %d", off, next, len(src))
			}
			switch op.Code {
			case OpEmit:
				anchors := make([]uint64, len(op.Anchors)/8)
				for i := range anchors {
					anchors[i] = binary.LittleEndian.Uint64(op.Anchors[8*i:])
				}
				out = AppendEmit(out, op.Stream, op.Direct, op.MsgID, anchors, op.Values)
			case OpAck:
				out = AppendAck(out, op.MsgID)
			case OpFail:
				out = AppendFail(out, op.MsgID)
			default:
				t.Fatalf("NextOp returned unknown code %d", op.Code)
			}
			if !bytes.Equal(out, src[:next]) {
				t.Fatalf("re-encoding %x gives %x", src[:next], out)
			}
			off = next
		}
	})
}

func FuzzDecodeContext(f *testing.F) {
	for _, c := range contextTable() {
		f.Add(c.ctx.Encode(nil))
	}
	f.Add(append(make([]byte, 20), 0xff, 0xff, 0xff, 0xff))
	f.Add([]byte{0xff, 0xff, 0xff, 0x7f})
	f.Fuzz(func(t *testing.T, src []byte) {
		c, err := DecodeContext(src)
		if err != nil {
			return
		}
		// Encoding sorts config keys (and a map keeps the last duplicate),
		// so compare after one more round trip rather than with src.
		enc := c.Encode(nil)
		c2, err := DecodeContext(enc)
		if err != nil {
			t.Fatalf("re-decoding: %v", err)
		}
		if !reflect.DeepEqual(c, c2) || !bytes.Equal(c2.Encode(nil), enc) {
			t.Fatalf("round trip differs: %+v vs %+v", c, c2)
		}
		if len(enc) > len(src) {
			t.Fatalf("re-encoding grew: %d > %d", len(enc), len(src))
		}
	})
}
