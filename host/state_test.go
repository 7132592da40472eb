package host

import (
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/ardea-dev/ardea/internal/tuple"
)

func TestMemoryStateOps(t *testing.T) {
	type op struct {
		do         string // put, del
		key, value string
	}
	cases := []struct {
		name string
		ops  []op
		want map[string]string
	}{
		{"empty", nil, map[string]string{}},
		{"put get", []op{{"put", "a", "1"}}, map[string]string{"a": "1"}},
		{"overwrite same size", []op{{"put", "a", "1"}, {"put", "a", "2"}}, map[string]string{"a": "2"}},
		{"overwrite shorter", []op{{"put", "a", "long"}, {"put", "a", "s"}}, map[string]string{"a": "s"}},
		{"overwrite longer", []op{{"put", "a", "s"}, {"put", "a", "longer"}}, map[string]string{"a": "longer"}},
		{"delete", []op{{"put", "a", "1"}, {"put", "b", "2"}, {"del", "a", ""}}, map[string]string{"b": "2"}},
		{"delete absent", []op{{"del", "zz", ""}}, map[string]string{}},
		{"empty key and value", []op{{"put", "", ""}}, map[string]string{"": ""}},
		{"binary keys", []op{{"put", "k\x00\x1fx", "v"}}, map[string]string{"k\x00\x1fx": "v"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := NewMemoryState(8)
			for _, o := range c.ops {
				if o.do == "put" {
					s.Put([]byte(o.key), []byte(o.value))
				} else {
					s.Delete([]byte(o.key))
				}
			}
			if s.Len() != len(c.want) {
				t.Fatalf("Len = %d, want %d", s.Len(), len(c.want))
			}
			for k, v := range c.want {
				got, ok := s.Get([]byte(k))
				if !ok || string(got) != v {
					t.Fatalf("Get(%q) = %q, %v; want %q", k, got, ok, v)
				}
			}
			if _, ok := s.Get([]byte("missing")); ok {
				t.Fatal("Get of a missing key reported ok")
			}
		})
	}
}

func TestMemoryStatePutCopies(t *testing.T) {
	s := NewMemoryState(0)
	if s.maxKeyGroups() != tuple.DefaultMaxKeyGroups {
		t.Fatalf("default key groups = %d", s.maxKeyGroups())
	}
	k, v := []byte("key"), []byte("value")
	s.Put(k, v)
	k[0], v[0] = 'X', 'X'
	if got, ok := s.Get([]byte("key")); !ok || string(got) != "value" {
		t.Fatalf("state aliased the caller's slices: %q %v", got, ok)
	}
}

func TestMemoryStateScan(t *testing.T) {
	s := NewMemoryState(4)
	for _, k := range []string{"b:2", "a:1", "b:1", "b:10", "c", "b"} {
		s.Put([]byte(k), []byte("v"+k))
	}
	scan := func(prefix string, limit int) []string {
		var got []string
		s.Scan([]byte(prefix), func(k, v []byte) bool {
			if string(v) != "v"+string(k) {
				t.Fatalf("value of %q is %q", k, v)
			}
			got = append(got, string(k))
			return len(got) < limit
		})
		return got
	}
	cases := []struct {
		prefix string
		limit  int
		want   []string
	}{
		{"b:", 100, []string{"b:1", "b:10", "b:2"}},
		{"b", 100, []string{"b", "b:1", "b:10", "b:2"}},
		{"", 100, []string{"a:1", "b", "b:1", "b:10", "b:2", "c"}},
		{"", 2, []string{"a:1", "b"}},
		{"zz", 100, nil},
	}
	for _, c := range cases {
		if got := scan(c.prefix, c.limit); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Scan(%q) = %q, want %q", c.prefix, got, c.want)
		}
	}
	// fn may use the state (the mutex is not held).
	s.Scan([]byte("b:"), func(k, _ []byte) bool { s.Delete(k); return true })
	if got := s.Keys(); !reflect.DeepEqual(got, []string{"a:1", "b", "c"}) {
		t.Fatalf("keys after deleting in scan = %q", got)
	}
}

// TestStateKeySuffixRule: a key made of a grouping payload plus 0x1F and
// any suffix lands in the key group of the payload, i.e. where the tuples
// fields-grouped on that payload are routed.
func TestStateKeySuffixRule(t *testing.T) {
	const groups = 256
	s := NewMemoryState(groups)
	for _, word := range []string{"apple", "banana", "cherry", "", "\x00\x01"} {
		vals := tuple.AppendValues(nil, tuple.Str(word), tuple.Int(1))
		spans, _, err := tuple.FieldSpans(nil, vals)
		if err != nil {
			t.Fatal(err)
		}
		routed := tuple.KeyGroup(tuple.HashFields(vals, spans, []int{0}), groups)
		for _, key := range []string{word, word + "\x1f", word + "\x1fcount", word + "\x1fa\x1fb"} {
			s.Put([]byte(key), []byte("x"))
			if got := s.keyGroupOf([]byte(key)); got != routed {
				t.Errorf("key %q in group %d, tuples of %q go to %d", key, got, word, routed)
			}
			if _, ok := s.ExportGroup(routed)[key]; !ok {
				t.Errorf("key %q not exported with group %d", key, routed)
			}
		}
	}
	// Without the separator the suffix changes the group (for some suffix).
	moved := false
	for _, suffix := range []string{"count", "x", "y", "z", "total"} {
		if s.keyGroupOf([]byte("apple"+suffix)) != s.keyGroupOf([]byte("apple")) {
			moved = true
		}
	}
	if !moved {
		t.Error("suffixes without 0x1F never changed the key group")
	}
}

func TestMemoryStateMoveGroups(t *testing.T) {
	src := NewMemoryState(32)
	for i := 0; i < 200; i++ {
		k := strings.Repeat("k", i%7) + string(rune('a'+i%26)) + "\x1f" + string(rune('0'+i%10))
		src.Put([]byte(k), []byte{byte(i)})
	}
	dst := NewMemoryState(32)
	groups := src.KeyGroups()
	if len(groups) < 2 {
		t.Fatalf("only %d key groups used", len(groups))
	}
	for _, kg := range groups {
		m := src.ExportGroup(kg)
		for k := range m {
			if src.keyGroupOf([]byte(k)) != kg {
				t.Fatalf("exported key %q is not in group %d", k, kg)
			}
		}
		if err := dst.ImportGroup(kg, m); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(dst.Keys(), src.Keys()) || dst.Len() != src.Len() {
		t.Fatalf("moved state differs: %d vs %d keys", dst.Len(), src.Len())
	}
	for _, k := range src.Keys() {
		a, _ := src.Get([]byte(k))
		b, _ := dst.Get([]byte(k))
		if string(a) != string(b) {
			t.Fatalf("value of %q: %v vs %v", k, a, b)
		}
	}
	// Exports are copies.
	kg := groups[0]
	m := src.ExportGroup(kg)
	for k := range m {
		m[k][0] = 0xEE
		if v, _ := src.Get([]byte(k)); v[0] == 0xEE {
			t.Fatal("ExportGroup aliases the state")
		}
	}
	// Import replaces the group and refuses keys of other groups.
	if err := dst.ImportGroup(kg, nil); err != nil {
		t.Fatal(err)
	}
	if got := len(dst.ExportGroup(kg)); got != 0 {
		t.Fatalf("group %d has %d keys after importing an empty map", kg, got)
	}
	if dst.Len() != src.Len()-len(m) {
		t.Fatalf("Len = %d after emptying group, want %d", dst.Len(), src.Len()-len(m))
	}
	other := groups[1]
	err := dst.ImportGroup(kg, src.ExportGroup(other))
	mustContain(t, err, "belongs to key group")
	mustContain(t, dst.ImportGroup(32, nil), "key group 32 out of range")
	if len(dst.ExportGroup(-1)) != 0 || len(dst.ExportGroup(99)) != 0 {
		t.Fatal("out-of-range export not empty")
	}
}

// TestMemoryStateConcurrentInspection: inspection calls may run while the
// task writes (run with -race).
func TestMemoryStateConcurrentInspection(t *testing.T) {
	s := NewMemoryState(16)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 2000; i++ {
			s.Put([]byte{byte(i), byte(i >> 8)}, []byte{byte(i)})
			if i%3 == 0 {
				s.Delete([]byte{byte(i - 1), byte((i - 1) >> 8)})
			}
		}
	}()
	for i := 0; i < 200; i++ {
		for _, kg := range s.KeyGroups() {
			_ = s.ExportGroup(kg)
		}
		_ = s.Len()
	}
	wg.Wait()
}

func TestMemoryStateUpdateDoesNotAllocate(t *testing.T) {
	s := NewMemoryState(16)
	k, v := []byte("counter\x1fn"), []byte("12345678")
	s.Put(k, v)
	allocs := testing.AllocsPerRun(1000, func() {
		s.Put(k, v)
		if _, ok := s.Get(k); !ok {
			t.Fatal("lost")
		}
	})
	if allocs != 0 {
		t.Fatalf("Put+Get of an existing key: %v allocs, want 0", allocs)
	}
}

// TestMemoryStateBytes: Bytes follows every way the state changes, and
// PutWithin refuses only writes that grow the state over the limit.
func TestMemoryStateBytes(t *testing.T) {
	s := NewMemoryState(8)
	check := func(want int64) {
		t.Helper()
		if got := s.Bytes(); got != want {
			t.Fatalf("Bytes = %d, want %d", got, want)
		}
	}
	s.Put([]byte("ab"), []byte("1234")) // 6
	s.Put([]byte("c"), []byte("12"))    // 3
	check(9)
	s.Put([]byte("ab"), []byte("1")) // shorter in place
	check(6)
	s.Delete([]byte("c"))
	s.Delete([]byte("absent"))
	check(3)
	if n, ok := s.PutWithin([]byte("d"), []byte("123456"), 9); ok || n != 10 {
		t.Fatalf("PutWithin over the limit = %d, %v; want 10, false", n, ok)
	}
	check(3)
	if n, ok := s.PutWithin([]byte("d"), []byte("12345"), 9); !ok || n != 9 {
		t.Fatalf("PutWithin up to the limit = %d, %v; want 9, true", n, ok)
	}
	// Over a limit lowered since: writes that do not grow it still work.
	if _, ok := s.PutWithin([]byte("d"), []byte("1"), 4); !ok {
		t.Fatal("a shrinking write over the limit was refused")
	}
	check(5)
	if _, ok := s.PutWithin([]byte("e"), nil, 4); ok {
		t.Fatal("a growing write over the limit was done")
	}

	// A transaction rolled back restores the size.
	s.Begin()
	s.Put([]byte("ab"), []byte("a much longer value"))
	s.Delete([]byte("d"))
	s.Rollback()
	check(5)

	// Key groups moved out and in, and a snapshot restored.
	other := NewMemoryState(8)
	for _, kg := range s.KeyGroups() {
		if err := other.ImportGroup(kg, s.ExportGroup(kg)); err != nil {
			t.Fatal(err)
		}
	}
	if other.Bytes() != 5 {
		t.Fatalf("imported state: Bytes = %d, want 5", other.Bytes())
	}
	for _, kg := range other.KeyGroups() {
		if err := other.ImportGroup(kg, nil); err != nil {
			t.Fatal(err)
		}
	}
	if other.Bytes() != 0 || other.Len() != 0 {
		t.Fatalf("emptied state: Bytes = %d, Len = %d", other.Bytes(), other.Len())
	}
	r, err := RestoreState(s.Snapshot(), 8)
	if err != nil {
		t.Fatal(err)
	}
	if r.Bytes() != 5 {
		t.Fatalf("restored state: Bytes = %d, want 5", r.Bytes())
	}
}
