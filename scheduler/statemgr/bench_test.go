package statemgr

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/scheduler/api"
)

func BenchmarkSetState(b *testing.B) {
	s := openTenant(b)
	createTopo(b, s, "wc")
	ctx := ctxT(b)
	for b.Loop() {
		if _, err := s.SetState(ctx, "wc", ExecState{State: api.StateRunning}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGetPhysicalPlan(b *testing.B) {
	s := openTenant(b)
	createTopo(b, s, "wc")
	ctx := ctxT(b)
	if _, err := s.PutPhysicalPlan(ctx, "wc", bytes.Repeat([]byte("p"), 16<<10)); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, _, err := s.GetPhysicalPlan(ctx, "wc"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLockRefresh(b *testing.B) {
	s := openTenant(b)
	createTopo(b, s, "wc")
	ctx := ctxT(b)
	l, err := s.AcquireTMLock(ctx, "wc", "tm", 10*time.Second)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := l.Refresh(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPutArtifact stores a new 1 MiB module per iteration (the
// content differs so the idempotency check does not short-cut it).
func BenchmarkPutArtifact1MiB(b *testing.B) {
	s := openTenant(b)
	ctx := ctxT(b)
	data := bytes.Repeat([]byte("m"), 1<<20)
	b.SetBytes(int64(len(data)))
	var i uint64
	for b.Loop() {
		i++
		binary.LittleEndian.PutUint64(data, i)
		if _, err := s.PutArtifact(ctx, "m.wasm", data); err != nil {
			b.Fatal(err)
		}
	}
}
