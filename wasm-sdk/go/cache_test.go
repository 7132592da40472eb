package ardea

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea/wasm-sdk/go/internal/tuple"
)

// cacheBytes recomputes what the cache's byte count should be.
func cacheBytes(s *State) int {
	n := 0
	for i := range s.slots {
		e := &s.slots[i]
		n += int(e.klen) + max(int(e.vlen), 0)
	}
	return n
}

func int64le(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }

// TestStateBytesKeys checks the []byte-keyed methods against the string
// ones, and that the cache copies a key it keeps.
func TestStateBytesKeys(t *testing.T) {
	x := stateBolt(t, func(st *State, tp Tuple) {
		key := []byte("alpha")
		if n := st.AddIntBytes(key, 2); n != 2 {
			t.Errorf("AddIntBytes = %d", n)
		}
		copy(key, "XXXXX") // the caller reuses its buffer
		if n := st.AddInt("alpha", 3); n != 5 {
			t.Errorf("AddInt after AddIntBytes = %d, want 5", n)
		}
		if v, ok := st.GetIntBytes([]byte("alpha")); !ok || v != 5 {
			t.Errorf("GetIntBytes = %d %v", v, ok)
		}
		if _, ok := st.GetIntBytes(key); ok {
			t.Error("XXXXX found")
		}
		st.PutIntBytes([]byte("beta"), -7)
		if v, ok := st.GetInt("beta"); !ok || v != -7 {
			t.Errorf("GetInt(beta) = %d %v", v, ok)
		}
		st.PutBytes([]byte("gamma"), []byte("g"))
		if v, ok := st.GetBytes([]byte("gamma")); !ok || string(v) != "g" {
			t.Errorf("GetBytes(gamma) = %q %v", v, ok)
		}
		st.DeleteBytes([]byte("beta"))
		if _, ok := st.Get("beta"); ok {
			t.Error("beta not deleted")
		}
		var seen []string
		st.ScanBytes([]byte("al"), func(k string, v []byte) bool {
			seen = append(seen, k)
			return true
		})
		if strings.Join(seen, ",") != "alpha" {
			t.Errorf("ScanBytes = %q", seen)
		}
	})
	x.h.State["beta"] = []byte("old")
	x.mustOK(x.execute(batchOf(nil)), 0, "execute")
	want := map[string][]byte{"alpha": int64le(5), "gamma": []byte("g")}
	if len(x.h.State) != len(want) {
		t.Errorf("host state %q", x.h.State)
	}
	for k, v := range want {
		if !bytes.Equal(x.h.State[k], v) {
			t.Errorf("host %s = %x, want %x", k, x.h.State[k], v)
		}
	}
}

// TestStateValueSizes moves one key's value between the inline and the
// separate representation and checks reads, the byte count and what the
// host gets.
func TestStateValueSizes(t *testing.T) {
	sizes := []int{3, 16, 17, 5000, 2, 0, 8, 40, 8}
	x := stateBolt(t, func(st *State, tp Tuple) {
		for i, n := range sizes {
			v := bytes.Repeat([]byte{byte('a' + i)}, n)
			st.Put("k", v)
			if got, ok := st.Get("k"); !ok || !bytes.Equal(got, v) {
				t.Errorf("size %d: Get = %d bytes, %v", n, len(got), ok)
			}
			_, isInt := st.GetInt("k")
			if isInt != (n == 8) {
				t.Errorf("size %d: GetInt ok = %v", n, isInt)
			}
			if st.bytes != cacheBytes(st) {
				t.Errorf("size %d: byte count %d, want %d", n, st.bytes, cacheBytes(st))
			}
		}
		st.Put("long", bytes.Repeat([]byte{1}, 20))
		if n := st.AddInt("long", 4); n != 4 { // not 8 bytes: counts as 0
			t.Errorf("AddInt over a 20-byte value = %d", n)
		}
		st.Delete("k")
		if v, ok := st.Get("k"); ok || v != nil {
			t.Errorf("deleted key: %q %v", v, ok)
		}
		if st.bytes != cacheBytes(st) {
			t.Errorf("byte count %d, want %d", st.bytes, cacheBytes(st))
		}
		if len(st.big) > 2 { // "k" and "long": one each, however often they change
			t.Errorf("%d separate values for two keys", len(st.big))
		}
	})
	x.mustOK(x.execute(batchOf(nil)), 0, "execute")
	if _, ok := x.h.State["k"]; ok || !bytes.Equal(x.h.State["long"], int64le(4)) {
		t.Errorf("host state %q", x.h.State)
	}
}

// TestStateManyKeys runs many keys of all lengths (sharing prefixes,
// the empty key, 0x00 and 0x1F bytes) through the cache with small bounds
// and checks every count against a plain map, in the cache and the host.
func TestStateManyKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var keys []string
	for i := range 3000 {
		n := rng.IntN(40)
		b := make([]byte, n)
		for j := range b {
			b[j] = "ab\x00\x1f"[rng.IntN(4)]
		}
		keys = append(keys, string(b), fmt.Sprintf("prefix-shared-%d", i))
	}
	keys = append(keys, "")
	for _, bounds := range []struct{ entries, bytes, probe int }{
		{DefaultCacheEntries, DefaultCacheBytes, maxProbe}, {500, 1 << 20, maxProbe}, {1 << 20, 4000, maxProbe},
		{DefaultCacheEntries, DefaultCacheBytes, 0}, // every collision empties the cache
	} {
		t.Run(fmt.Sprintf("%d-%d-%d", bounds.entries, bounds.bytes, bounds.probe), func(t *testing.T) {
			ref := map[string]int64{}
			x := stateBolt(t, func(st *State, tp Tuple) {
				for range 20000 {
					k := keys[rng.IntN(len(keys))]
					d := int64(rng.IntN(5))
					ref[k] += d
					var got int64
					if rng.IntN(2) == 0 {
						got = st.AddInt(k, d)
					} else {
						got = st.AddIntBytes([]byte(k), d)
					}
					if got != ref[k] {
						t.Fatalf("AddInt(%q) = %d, want %d", k, got, ref[k])
					}
				}
				if st.entries() > bounds.entries || st.bytes > bounds.bytes || st.bytes != cacheBytes(st) {
					t.Errorf("cache: %d entries, %d bytes (recount %d)", st.entries(), st.bytes, cacheBytes(st))
				}
			})
			x.r.state.maxEntries, x.r.state.maxBytes, x.r.state.maxProbe = bounds.entries, bounds.bytes, bounds.probe
			x.mustOK(x.execute(batchOf(nil)), 0, "execute")
			for k, v := range ref {
				if got := x.h.State[k]; !bytes.Equal(got, int64le(v)) {
					t.Fatalf("host %q = %x, want %d", k, got, v)
				}
			}
			if len(x.h.State) != len(ref) {
				t.Errorf("host has %d keys, want %d", len(x.h.State), len(ref))
			}
		})
	}
}

// TestStatePutOfAGetValueAcrossEviction: a value from Get stays valid
// for a Put of it that empties the cache first.
func TestStatePutOfAGetValueAcrossEviction(t *testing.T) {
	big := bytes.Repeat([]byte("B"), 100)
	x := stateBolt(t, func(st *State, tp Tuple) {
		for i := range 4 {
			st.Put(fmt.Sprintf("f%d", i), []byte("fill"))
		}
		small, _ := st.Get("small")
		large, _ := st.Get("large")
		st.Put("copy-small", small) // the cache is full: this insert empties it
		st.Put("copy-large", large)
	})
	x.h.State["small"] = []byte("tiny value")
	x.h.State["large"] = big
	x.r.state.maxEntries = 6
	x.mustOK(x.execute(batchOf(nil)), 0, "execute")
	if string(x.h.State["copy-small"]) != "tiny value" || !bytes.Equal(x.h.State["copy-large"], big) {
		t.Errorf("copies: %q, %d bytes", x.h.State["copy-small"], len(x.h.State["copy-large"]))
	}
}

// TestStateKeyViews checks StateKeyView and AppendStateKey against
// StateKey.
func TestStateKeyViews(t *testing.T) {
	ctx := wordContext("word")
	ctx.Inputs[1].Fields = []string{"s", "i", "n", "b", "f"}
	vals := []tuple.Value{tuple.Str("héllo"), tuple.Int(31), tuple.NullValue(), tuple.Boolean(true), tuple.Float(2.5)}
	x := newHarness(t, nil, &funcBolt{exec: func(tp Tuple, c *BoltCollector) error {
		for i, f := range tp.Fields() {
			if v, w := StateKeyView(tp, f), StateKey(tp, f); string(v) != w || string(StateKeyViewAt(tp, i)) != w {
				t.Errorf("%s: StateKeyView %x, StateKey %x", f, v, w)
			}
		}
		buf := []byte("pre:")
		if got, want := AppendStateKey(buf, tp, "s", "i", "n"), "pre:"+StateKey(tp, "s", "i", "n"); string(got) != want {
			t.Errorf("AppendStateKey = %q, want %q", got, want)
		}
		if got, want := AppendStateKeyAt(nil, tp, 4, 3), StateKeyAt(tp, 4, 3); string(got) != want {
			t.Errorf("AppendStateKeyAt = %q, want %q", got, want)
		}
		if string(StateKeyView(tp, "s")) != "héllo" {
			t.Error("string field payload")
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Error("StateKeyView of an undeclared field did not panic")
				}
			}()
			StateKeyView(tp, "nope")
		}()
		return nil
	}})
	x.prepare(ctx)
	var w tuple.BatchWriter
	w.Reset()
	w.Append(1, 7, 0, tuple.AppendValues(nil, vals...))
	x.mustOK(x.execute(w.Buf), 0, "execute")
}

// TestEmitFastPathFallbacks mixes the kinds the emit fast path encodes
// with those it leaves to the general path, and emits on a context
// without a default stream.
func TestEmitFastPathFallbacks(t *testing.T) {
	x := newHarness(t, nil, &funcBolt{exec: func(tp Tuple, c *BoltCollector) error {
		c.EmitAnchored(tp, Text("a"), int64(1))
		c.EmitAnchored(tp, "b", 2)
		c.EmitAnchored(tp, Text("c"), 2.5) // second value: general path
		c.Emit([]byte{1}, true)
		return nil
	}})
	x.prepare(wordContext("word", "count"))
	x.mustOK(x.execute(batchOf([]tuple.Value{tuple.Str("x")})), 0, "execute")
	want := [][]tuple.Value{
		{tuple.Str("a"), tuple.Int(1)}, {tuple.Str("b"), tuple.Int(2)},
		{tuple.Str("c"), tuple.Float(2.5)}, {tuple.Bin([]byte{1}), tuple.Boolean(true)},
	}
	ops := x.h.ops()
	if len(ops) != len(want) {
		t.Fatalf("%d ops", len(ops))
	}
	for i, op := range ops {
		if !bytes.Equal(op.Values, tuple.AppendValues(nil, want[i]...)) {
			t.Errorf("op %d values %x", i, op.Values)
		}
		if i < 3 && !bytes.Equal(op.Anchors, int64le(1)) {
			t.Errorf("op %d anchors %x", i, op.Anchors)
		}
	}

	noDefault := wordContext("word")
	noDefault.Outputs = noDefault.Outputs[1:]
	y := newHarness(t, nil, &funcBolt{exec: func(tp Tuple, c *BoltCollector) error {
		c.EmitAnchored(tp, Text("a"))
		return nil
	}})
	y.prepare(noDefault)
	y.mustFail(y.execute(batchOf(nil)), `undeclared stream "default" (declared: "side")`)
}

// discardHost is a host that keeps nothing (allocation tests).
type discardHost struct{}

func (discardHost) emit([]byte)                    {}
func (discardHost) log(int32, string)              {}
func (discardHost) error(string)                   {}
func (discardHost) stateGet(string, []byte) int32  { return -1 }
func (discardHost) stateWrite([]byte)              {}
func (discardHost) stateScan(string, []byte) int32 { return 4 }
func (discardHost) metric(string, int64)           {}
func (discardHost) gauge(string, float64)          {}
func (discardHost) observe(string, int64)          {}
func (discardHost) observeMany(string, []int64)    {}
func (discardHost) now() int64                     { return 0 }

// TestCountAllocations: a count-like bolt (StateKeyView, AddIntBytes,
// EmitAnchored with Text and an int64, Ack) allocates nothing per batch
// once its keys are cached.
func TestCountAllocations(t *testing.T) {
	var st *State
	x := &harness{t: t, r: newRuntime(discardHost{})}
	x.r.register(nil, &funcBolt{
		prepare: func(c *Context) error { st = c.State(); return nil },
		exec: func(tp Tuple, c *BoltCollector) error {
			w := StateKeyView(tp, "word")
			c.EmitAnchored(tp, Text(w), st.AddIntBytes(w, 1))
			c.Ack(tp)
			return nil
		},
	}, nil)
	ctx := wordContext("word", "count")
	if code := x.r.prepare(x.put(ctx.Encode(nil))); code != 0 {
		t.Fatal("prepare failed")
	}
	var recs [][]tuple.Value
	for _, w := range strings.Fields("the quick brown fox jumps over the lazy dog and the fox keeps on running") {
		recs = append(recs, []tuple.Value{tuple.Str(w)})
	}
	n := x.put(batchOf(recs...))
	if x.r.execute(n) != 0 {
		t.Fatal("execute failed")
	}
	allocs := testing.AllocsPerRun(20, func() {
		if x.r.execute(n) != 0 {
			t.Fatal("execute failed")
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per batch, want 0", allocs)
	}
}

// TestStateHashInlined: slotOf hashes keys exactly like hashKey (it has
// the code inlined by hand).
func TestStateHashInlined(t *testing.T) {
	var s State
	s.init(nil)
	s.index = make([]uint32, 64) // slotOf returns the hash of a miss
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		k := make([]byte, rng.IntN(30))
		for i := range k {
			k[i] = byte(rng.Uint32())
		}
		pre, h := s.hashKey(string(k))
		if i, pre2, h2 := s.slotOf(string(k)); i != -1 || pre2 != pre || h2 != h {
			t.Fatalf("%x: slotOf %d %x %x, hashKey %x %x", k, i, pre2, h2, pre, h)
		}
	}
}
