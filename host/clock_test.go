package host

import (
	"context"
	"testing"

	"github.com/ardea-dev/ardea/internal/tuple"
)

// sleb appends v as a signed LEB128.
func sleb(dst []byte, v int64) []byte {
	for {
		b := byte(v & 0x7F)
		v >>= 7
		if (v == 0 && b&0x40 == 0) || (v == -1 && b&0x40 != 0) {
			return append(dst, b)
		}
		dst = append(dst, b|0x80)
	}
}

// clockCheck is wasm code that traps unless WASI clock id reads a time
// that is a multiple of guestClockResolution and reports that resolution.
func clockCheck(id byte) []byte {
	res := int64(guestClockResolution)
	const (
		opCall, opDrop, opIf, opI64Load, opI64Const = 0x10, 0x1A, 0x04, 0x29, 0x42
		opI64Eqz, opI64Ne, opI64RemU, opI32Eqz      = 0x50, 0x52, 0x82, 0x45
	)
	c := []byte{opI32Const, id, opI64Const, 0, opI32Const, 16, opCall, 0, opDrop, // clock_time_get(id, 0, 16)
		opI32Const, 16, opI64Load, 3, 0, opI64Const}
	c = sleb(c, res)
	c = append(c, opI64RemU, opI64Eqz, opI32Eqz, opIf, 0x40, opUnreachable, opEnd,
		opI32Const, id, opI32Const, 24, opCall, 1, opDrop, // clock_res_get(id, 24)
		opI32Const, 24, opI64Load, 3, 0, opI64Const)
	c = sleb(c, res)
	return append(c, opI64Ne, opIf, 0x40, opUnreachable, opEnd)
}

// TestGuestClocksCoarse: every clock a guest reads has
// guestClockResolution: the ABI's now (the counter fixture emits it), and
// WASI's realtime and monotonic clocks read through clock_time_get and
// clock_res_get by a bolt that traps on a finer value.
func TestGuestClocksCoarse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt := newRuntime(t, Config{})

	s, err := compile(t, rt, "counter").NewSpout(ctx, instanceConfig("counter"))
	if err != nil {
		t.Fatal(err)
	}
	var rec recorder
	if err := s.Open(ctx, taskContext("counter", map[string]string{"count.n": "50"},
		tuple.StreamDecl{Name: "default", Fields: []string{"n", "ts"}}), &rec); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Next(ctx, 50, &rec); err != nil {
		t.Fatal(err)
	}
	got := rec.take()
	if len(got) == 0 {
		t.Fatal("the counter emitted nothing")
	}
	for _, e := range got {
		if ts := e.Values[1].I; ts%int64(guestClockResolution) != 0 {
			t.Fatalf("ardea.now read %d: finer than %v", ts, guestClockResolution)
		}
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}

	i32 := []byte{vI32}
	imports := []wImport{
		{"wasi_snapshot_preview1", "clock_time_get", []byte{vI32, vI64, vI32}, i32},
		{"wasi_snapshot_preview1", "clock_res_get", []byte{vI32, vI32}, i32},
	}
	exec := append(append(clockCheck(0), clockCheck(1)...), ret0()...) // realtime, monotonic
	wasm := buildWasm(imports, []wFunc{
		{"ardea_abi_version", nil, i32, []byte{opI32Const, 1, opEnd}},
		{"ardea_buffer", i32, i32, []byte{opI32Const, 0x80, 0x08, opEnd}},
		{"ardea_prepare", i32, i32, ret0()},
		{"ardea_execute", i32, i32, exec},
		{"ardea_tick", nil, i32, ret0()},
		{"ardea_finish", nil, i32, ret0()},
		{"ardea_close", nil, i32, ret0()},
	}, true)
	mod, err := rt.CompileBytes(ctx, "clocks.wasm", wasm)
	if err != nil {
		t.Fatal(err)
	}
	b, err := mod.NewBolt(ctx, instanceConfig("clocks"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	if err := b.Prepare(ctx, taskContext("clocks", nil, wordStream), &recorder{}); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if err := b.Execute(ctx, batchOf(1, "x"), &recorder{}); err != nil {
			t.Fatalf("a WASI clock is finer than %v: %v", guestClockResolution, err)
		}
	}
}
