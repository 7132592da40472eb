package checkpoint

import (
	"bytes"
	"testing"
)

// FuzzUnseal: unseal, openGlobal and openMarker never panic, and whatever
// they accept is exactly the envelope seal builds for the same key and data.
func FuzzUnseal(f *testing.F) {
	f.Add(seal(kindSnap, "wc", 3, 2, []byte("state")))
	f.Add(seal(kindSnap, "wc", 3, 2, nil))
	f.Add(seal(kindGlobal, "wc", 9, 0, nil))
	f.Add([]byte("ARDC"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if data, err := unseal(b, kindSnap, "wc", 3, 2); err == nil {
			if !bytes.Equal(seal(kindSnap, "wc", 3, 2, data), b) {
				t.Fatalf("accepted %x", b)
			}
		}
		if err := openMarker(b, "wc", 9); err == nil {
			if !bytes.Equal(seal(kindGlobal, "wc", 9, 0, nil), b) {
				t.Fatalf("accepted marker %x", b)
			}
		}
		if id, err := openGlobal(b, "wc"); err == nil {
			if !bytes.Equal(seal(kindGlobal, "wc", id, 0, nil), b) {
				t.Fatalf("accepted global %x", b)
			}
		}
	})
}
