package tuple

import "testing"

// benchOps is 1024 emit ops of a short string and an int, as a count
// bolt writes them.
func benchOps() []byte {
	var b []byte
	for i := 0; i < 1024; i++ {
		b = AppendEmit(b, 0, NoTask, 0, nil, AppendValues(nil, Str("wordy"), Int(int64(i))))
	}
	return b
}

// BenchmarkDecodeOps: the host's decoding of an emit buffer, with NextOp
// (an Op returned by value) and with Op.Decode (one Op filled in place, as
// hostEmit does). ns/op-decoded is per op.
func BenchmarkDecodeOps(b *testing.B) {
	ops := benchOps()
	b.Run("NextOp", func(b *testing.B) {
		var spans []int
		for i := 0; i < b.N; i++ {
			for off := 0; off < len(ops); {
				op, next, s, err := NextOp(ops, off, spans)
				if err != nil || op.Code != OpEmit {
					b.Fatal(err)
				}
				spans, off = s, next
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1024), "ns/op-decoded")
	})
	b.Run("Decode", func(b *testing.B) {
		var op Op
		var spans []int
		for i := 0; i < b.N; i++ {
			for off := 0; off < len(ops); {
				next, s, err := op.Decode(ops, off, spans)
				if err != nil || op.Code != OpEmit {
					b.Fatal(err)
				}
				spans, off = s, next
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1024), "ns/op-decoded")
	})
}
