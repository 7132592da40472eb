package host

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

func TestStateSnapshotRoundTrip(t *testing.T) {
	s := NewMemoryState(64)
	for i := range 500 {
		s.Put(fmt.Appendf(nil, "key-%d", i), bytes.Repeat([]byte{byte(i)}, i%17))
	}
	s.Delete([]byte("key-3"))
	got, err := RestoreState(s.Snapshot(), 64)
	if err != nil {
		t.Fatal(err)
	}
	if got.Len() != s.Len() {
		t.Fatalf("%d keys restored, want %d", got.Len(), s.Len())
	}
	for _, k := range s.Keys() {
		want, _ := s.Get([]byte(k))
		have, ok := got.Get([]byte(k))
		if !ok || !bytes.Equal(have, want) {
			t.Fatalf("key %q: %x, want %x", k, have, want)
		}
	}
	if _, err := RestoreState(s.Snapshot(), 128); !errors.Is(err, ErrBadSnapshot) {
		t.Fatalf("restore with another key group count: %v", err)
	}
	empty, err := RestoreState(NewMemoryState(8).Snapshot(), 8)
	if err != nil || empty.Len() != 0 {
		t.Fatalf("empty snapshot: %v, %d keys", err, empty.Len())
	}
}

func FuzzRestoreState(f *testing.F) {
	s := NewMemoryState(16)
	s.Put([]byte("a"), []byte("1"))
	s.Put([]byte("bb"), nil)
	f.Add(s.Snapshot())
	f.Add([]byte{16, 0, 0, 0, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := RestoreState(b, 16)
		if err != nil {
			if !errors.Is(err, ErrBadSnapshot) {
				t.Fatalf("error %v does not wrap ErrBadSnapshot", err)
			}
			return
		}
		// What decodes re-encodes to a snapshot of the same content.
		again, err := RestoreState(st.Snapshot(), 16)
		if err != nil || again.Len() != st.Len() {
			t.Fatalf("re-decode: %v", err)
		}
	})
}

func TestStateTransaction(t *testing.T) {
	s := NewMemoryState(16)
	s.Put([]byte("a"), []byte("1"))
	s.Put([]byte("b"), []byte("2"))
	s.Begin()
	s.Put([]byte("a"), []byte("10"))
	s.Put([]byte("a"), []byte("11"))
	s.Delete([]byte("b"))
	s.Put([]byte("c"), []byte("3"))
	s.Rollback()
	for k, want := range map[string]string{"a": "1", "b": "2"} {
		if v, ok := s.Get([]byte(k)); !ok || string(v) != want {
			t.Fatalf("after rollback %s = %q, want %q", k, v, want)
		}
	}
	if _, ok := s.Get([]byte("c")); ok || s.Len() != 2 {
		t.Fatalf("after rollback: c present or %d keys", s.Len())
	}
	s.Begin()
	s.Put([]byte("a"), []byte("7"))
	s.Commit()
	if v, _ := s.Get([]byte("a")); string(v) != "7" {
		t.Fatalf("after commit a = %q", v)
	}
}
