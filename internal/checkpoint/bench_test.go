package checkpoint

import (
	"fmt"
	"testing"
)

// BenchmarkStoreSave: one task snapshot per op, through each Store (the
// directory store fsyncs the file and the directory; the JetStream store
// writes to the embedded server over a local connection, file storage).
func BenchmarkStoreSave(b *testing.B) {
	for _, size := range []int{4 << 10, 1 << 20} {
		data := make([]byte, size)
		b.Run(fmt.Sprintf("dir/%dKiB", size>>10), func(b *testing.B) {
			s, err := NewDirStore(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			benchSave(b, s, data)
		})
		b.Run(fmt.Sprintf("jetstream/%dKiB", size>>10), func(b *testing.B) {
			benchSave(b, newJetStreamStore(b, JetStreamOptions{}), data)
		})
	}
}

func benchSave(b *testing.B, s Store, data []byte) {
	ctx := ctxT(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for i := uint64(1); b.Loop(); i++ {
		if err := s.Save(ctx, "bench", i, 1, data); err != nil {
			b.Fatal(err)
		}
	}
}
