package ardea

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea/wasm-sdk/go/internal/tuple"
)

// stateBolt runs fn for each tuple with the task's state.
func stateBolt(t *testing.T, fn func(st *State, tp Tuple)) *harness {
	var st *State
	x := newHarness(t, nil, &funcBolt{
		prepare: func(c *Context) error { st = c.State(); return nil },
		exec:    func(tp Tuple, c *BoltCollector) error { fn(st, tp); return nil },
	})
	x.prepare(wordContext("word"))
	return x
}

func TestStateWriteBack(t *testing.T) {
	x := stateBolt(t, func(st *State, tp Tuple) {
		w := tp.String(0)
		n := st.AddInt(w, 1)
		if w == "del" {
			st.Delete("a")
		}
		if v, ok := st.GetInt(w); !ok || v != n {
			t.Errorf("GetInt(%s) = %d %v after AddInt = %d", w, v, ok, n)
		}
	})
	x.h.State["a"] = binary.LittleEndian.AppendUint64(nil, 10)
	words := func(ws ...string) []byte {
		var recs [][]tuple.Value
		for _, w := range ws {
			recs = append(recs, []tuple.Value{tuple.Str(w)})
		}
		return batchOf(recs...)
	}
	x.mustOK(x.execute(words("a", "b", "a", "c", "b", "a")), 0, "execute")
	// Three distinct keys: three state_get misses, one state_write.
	if x.h.Gets != 3 || x.h.Writes != 1 {
		t.Errorf("%d gets, %d writes; want 3, 1", x.h.Gets, x.h.Writes)
	}
	want := map[string]int64{"a": 13, "b": 2, "c": 1}
	for k, v := range want {
		if got := int64(binary.LittleEndian.Uint64(x.h.State[k])); got != v {
			t.Errorf("host state %s = %d, want %d", k, got, v)
		}
	}
	// The write lists each dirty key once, in first-write order.
	var w []byte
	for _, k := range []string{"a", "b", "c"} {
		w = append(w, 1)
		w = binary.LittleEndian.AppendUint32(w, 1)
		w = append(w, k...)
		w = binary.LittleEndian.AppendUint32(w, 8)
		w = binary.LittleEndian.AppendUint64(w, uint64(want[k]))
	}
	if !bytes.Equal(x.h.WriteOps[0], w) {
		t.Errorf("state_write\n%x\nwant\n%x", x.h.WriteOps[0], w)
	}
	// Cached now: no more gets; one write per call; deletes are ops 2.
	x.h.Reset()
	x.mustOK(x.execute(words("a", "del")), 0, "execute")
	if x.h.Gets != 1 || x.h.Writes != 1 { // "del" is new
		t.Errorf("%d gets, %d writes; want 1, 1", x.h.Gets, x.h.Writes)
	}
	if _, ok := x.h.State["a"]; ok || !bytes.Contains(x.h.WriteOps[0], []byte{2, 1, 0, 0, 0, 'a', 0, 0, 0, 0}) {
		t.Errorf("delete not written: %x", x.h.WriteOps[0])
	}
	// A call that changes nothing writes nothing.
	x.h.Reset()
	x.r.bolt.(*funcBolt).exec = func(tp Tuple, c *BoltCollector) error {
		if v, ok := x.r.state.Get("a"); ok || v != nil {
			t.Error("deleted key still readable")
		}
		if _, ok := x.r.state.Get("zz"); ok {
			t.Error("absent key found")
		}
		return nil
	}
	x.mustOK(x.execute(words("x")), 0, "execute")
	if x.h.Writes != 0 || x.h.Gets != 1 {
		t.Errorf("%d writes, %d gets for a read-only call", x.h.Writes, x.h.Gets)
	}
}

func TestStatePrepareEmptiesCache(t *testing.T) {
	x := stateBolt(t, func(st *State, tp Tuple) { st.AddInt("k", 1) })
	x.mustOK(x.execute(batchOf(nil)), 0, "execute")
	x.h.State["k"] = binary.LittleEndian.AppendUint64(nil, 100) // e.g. a restart with moved state
	x.prepare(wordContext("word"))
	x.mustOK(x.execute(batchOf(nil)), 0, "execute")
	if v := binary.LittleEndian.Uint64(x.h.State["k"]); v != 101 {
		t.Errorf("k = %d, want 101", v)
	}
}

func TestStateEviction(t *testing.T) {
	x := stateBolt(t, func(st *State, tp Tuple) {
		for i := range 10 {
			st.PutInt(fmt.Sprintf("k%d", i), int64(i))
		}
		st.Put("big", bytes.Repeat([]byte{1}, 300))
	})
	x.r.state.maxEntries = 4
	x.r.state.maxBytes = 200
	x.mustOK(x.execute(batchOf(nil)), 0, "execute")
	if x.h.Writes < 3 || len(x.h.State) != 11 || len(x.h.State["big"]) != 300 {
		t.Errorf("%d writes, %d keys", x.h.Writes, len(x.h.State))
	}
	if x.r.state.entries() > 4 {
		t.Errorf("cache holds %d entries", x.r.state.entries())
	}
	for i := range 10 {
		if v := binary.LittleEndian.Uint64(x.h.State[fmt.Sprintf("k%d", i)]); v != uint64(i) {
			t.Errorf("k%d = %d", i, v)
		}
	}
}

func TestStateLargeValuesAndScan(t *testing.T) {
	big := bytes.Repeat([]byte("v"), 5000)
	var scanned []string
	x := stateBolt(t, func(st *State, tp Tuple) {
		if v, ok := st.Get("big"); !ok || !bytes.Equal(v, big) {
			t.Errorf("Get(big) = %d bytes, %v", len(v), ok)
		}
		st.Put("p/2", []byte("two"))
		st.Put("p/1", big)
		st.Delete("p/0")
		st.Put("q", nil)
		st.Scan("p/", func(k string, v []byte) bool {
			scanned = append(scanned, fmt.Sprintf("%s=%d", k, len(v)))
			st.Scan("q", func(k string, v []byte) bool { // nested scans work
				scanned = append(scanned, k)
				return true
			})
			return k != "p/2"
		})
	})
	x.h.State["big"] = big
	x.h.State["p/0"] = []byte("gone")
	x.h.State["p/3"] = []byte("three")
	x.mustOK(x.execute(batchOf(nil)), 0, "execute")
	if got := strings.Join(scanned, ","); got != "p/1=5000,q,p/2=3,q" {
		t.Errorf("scan = %q", got)
	}
	if v, ok := x.h.State["q"]; !ok || len(v) != 0 {
		t.Errorf("empty value not stored: %v %v", v, ok)
	}
	// "big" needs two state_get calls (the first finds the buffer too
	// small); the scan's flush is the call's only state_write.
	if x.h.Gets != 2 || x.h.Writes != 1 {
		t.Errorf("%d gets, %d writes", x.h.Gets, x.h.Writes)
	}
}

// TestStateKeyFollowsTuples checks StateKey against hash.txt: the key's
// state hash is the tuple's fields-grouping hash (payloads without 0x1F).
func TestStateKeyFollowsTuples(t *testing.T) {
	n := 0
	for _, l := range readVectors(t, "hash.txt") {
		if l[0] != "tuple" {
			continue
		}
		vals := parseSpec(t, l[2])
		ctx := wordContext("word")
		ctx.Inputs[0].Fields = nil
		for i := range vals {
			ctx.Inputs[0].Fields = append(ctx.Inputs[0].Fields, fmt.Sprintf("f%d", i))
		}
		var idx []int
		var names []string
		for _, f := range strings.Split(l[3], ",") {
			var i int
			fmt.Sscan(f, &i)
			idx = append(idx, i)
			names = append(names, fmt.Sprintf("f%d", i))
		}
		var key, keyAt string
		x := newHarness(t, nil, &funcBolt{exec: func(tp Tuple, c *BoltCollector) error {
			key, keyAt = StateKey(tp, names...), StateKeyAt(tp, idx...)
			return nil
		}})
		x.prepare(ctx)
		x.mustOK(x.execute(batchOf(vals)), 0, "execute")
		if fmt.Sprintf("%x", key) != l[7] || key != keyAt {
			t.Errorf("%s: StateKey %x / %x, want %s", l[1], key, keyAt, l[7])
		}
		if h := fmt.Sprintf("%016x", tuple.StateKeyHash([]byte(key))); h != l[8] {
			t.Errorf("%s: key hash %s, want %s", l[1], h, l[8])
		}
		if !strings.Contains(key, KeySep) && l[8] != l[4] {
			t.Errorf("%s: key hash %s differs from tuple hash %s", l[1], l[8], l[4])
		}
		n++
	}
	if n == 0 {
		t.Fatal("no tuple vectors")
	}
}
