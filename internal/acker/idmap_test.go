package acker

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestIDMapMatchesAMap: random puts, gets and deletes agree with a Go
// map, for random keys, sequential ones and keys that all share a home
// slot (long clusters that wrap around the end of the slots).
func TestIDMapMatchesAMap(t *testing.T) {
	shapes := map[string]func(r *rand.Rand) uint64{
		"random":     func(r *rand.Rand) uint64 { return r.Uint64() | 1 },
		"sequential": func(r *rand.Rand) uint64 { return r.Uint64N(300) + 1 },
		// Multiples of 2^60 all have home slot 0 in a table of up to 2^4
		// slots... and few homes in any table: long probe sequences.
		"clustered": func(r *rand.Rand) uint64 { return (r.Uint64N(40) + 1) << 58 },
	}
	for name, key := range shapes {
		t.Run(name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, uint64(len(name))))
			var m idMap[int]
			want := map[uint64]int{}
			for i := range 200_000 {
				k := key(r)
				switch r.IntN(3) {
				case 0:
					m.put(k, i)
					want[k] = i
				case 1:
					v, ok := m.del(k)
					wv, wok := want[k]
					if ok != wok || v != wv {
						t.Fatalf("op %d: del(%x) = %d, %v; want %d, %v", i, k, v, ok, wv, wok)
					}
					delete(want, k)
				default:
					v, ok := m.get(k)
					wv, wok := want[k]
					if ok != wok || v != wv {
						t.Fatalf("op %d: get(%x) = %d, %v; want %d, %v", i, k, v, ok, wv, wok)
					}
				}
				if m.len() != len(want) {
					t.Fatalf("op %d: len %d, want %d", i, m.len(), len(want))
				}
			}
			keys := m.appendKeys(nil)
			slices.Sort(keys)
			wantKeys := make([]uint64, 0, len(want))
			for k := range want {
				wantKeys = append(wantKeys, k)
			}
			slices.Sort(wantKeys)
			if !slices.Equal(keys, wantKeys) {
				t.Errorf("keys differ: %d against %d", len(keys), len(wantKeys))
			}
			// Emptied, every slot is free again.
			for _, k := range keys {
				m.del(k)
			}
			for i, s := range m.slots {
				if s.key != 0 {
					t.Fatalf("slot %d holds %x after every key was deleted", i, s.key)
				}
			}
		})
	}
}

func TestIDMapZeroKey(t *testing.T) {
	var m idMap[int]
	if _, ok := m.get(0); ok {
		t.Error("get(0) found something")
	}
	if _, ok := m.del(0); ok {
		t.Error("del(0) removed something")
	}
	defer func() {
		if recover() == nil {
			t.Error("put(0) did not panic")
		}
	}()
	m.put(0, 1)
}

// BenchmarkIDMap: the acker's pattern, a window of in-flight random ids:
// put the newest, get it, delete the oldest.
func BenchmarkIDMap(b *testing.B) {
	const window = 4096
	r := rand.New(rand.NewPCG(3, 4))
	ring := make([]uint64, window)
	b.Run("idMap", func(b *testing.B) {
		var m idMap[*input]
		in := new(input)
		for i := 0; b.Loop(); i++ {
			j := i % window
			if ring[j] != 0 {
				m.del(ring[j])
			}
			ring[j] = r.Uint64() | 1
			m.put(ring[j], in)
			if _, ok := m.get(ring[j]); !ok {
				b.Fatal("lost")
			}
		}
	})
	clear(ring)
	b.Run("map", func(b *testing.B) {
		m := map[uint64]*input{}
		in := new(input)
		for i := 0; b.Loop(); i++ {
			j := i % window
			if ring[j] != 0 {
				delete(m, ring[j])
			}
			ring[j] = r.Uint64() | 1
			m[ring[j]] = in
			if _, ok := m[ring[j]]; !ok {
				b.Fatal("lost")
			}
		}
	})
}
