package host

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/connectors/plugin"
)

// limitBolt prepares a misbehave bolt in mode with extra guest config,
// the instance's limits and its state, and returns both.
func limitBolt(t *testing.T, mod *Module, ic InstanceConfig, mode string, config map[string]string) (plugin.Bolt, *MemoryState) {
	t.Helper()
	b, err := mod.NewBolt(context.Background(), ic)
	if err != nil {
		t.Fatal(err)
	}
	cfg := map[string]string{"mode": mode}
	for k, v := range config {
		cfg[k] = v
	}
	tc := taskContext(ic.Component, cfg, wordStream)
	if err := b.Prepare(context.Background(), tc, &recorder{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	return b, tc.State.(*MemoryState)
}

// mustFailWith checks an instance error's kind and text, and that the
// instance is dead.
func mustFailWith(t *testing.T, b plugin.Bolt, err, kind error, parts ...string) {
	t.Helper()
	mustContain(t, err, parts...)
	if !errors.Is(err, kind) {
		t.Fatalf("errors.Is(%v, %v) = false", err, kind)
	}
	if err2 := b.Execute(context.Background(), batchOf(2, "y"), &discard{}); err2 != err {
		t.Fatalf("after the failure: %v, want the same error", err2)
	}
}

func TestStateLimits(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Config{})
	mod := compile(t, rt, "misbehave")
	const who = "component misbehave task 7: ardea_execute: "
	small := func(l Limits) InstanceConfig {
		ic := instanceConfig("misbehave")
		ic.Limits = l
		return ic
	}

	t.Run("state_put over state.max.bytes", func(t *testing.T) {
		b, st := limitBolt(t, mod, small(Limits{StateMaxBytes: 1 << 20}), "statebomb", map[string]string{"bomb.value.bytes": "100000"})
		err := b.Execute(context.Background(), batchOf(1, "x"), &discard{})
		// Ten entries of 6+100000 bytes fit; the eleventh (key bomb/10)
		// would take the state to 1100067 bytes.
		mustFailWith(t, b, err, ErrStateLimit,
			who+"state_put: host-side state would reach 1100067 bytes, over the limit state.max.bytes = 1048576")
		if st.Len() != 10 || st.Bytes() != 1000060 {
			t.Fatalf("state holds %d keys, %d bytes; want 10 and 1000060 (nothing of the refused put)", st.Len(), st.Bytes())
		}
	})

	t.Run("state_write over state.max.bytes applies none of the batch", func(t *testing.T) {
		b, st := limitBolt(t, mod, small(Limits{StateMaxBytes: 1 << 20}), "statewrite", map[string]string{"bomb.value.bytes": "100000"})
		err := b.Execute(context.Background(), batchOf(1, "x"), &discard{})
		// Batches of four: 8 entries fit, the third batch would take
		// the state to 12 entries (bomb/10 and bomb/11 have 7-byte keys).
		mustFailWith(t, b, err, ErrStateLimit,
			who+"state_write: host-side state would reach 1200074 bytes, over the limit state.max.bytes = 1048576")
		if st.Len() != 8 {
			t.Fatalf("state holds %d keys, want the 8 of the first two batches", st.Len())
		}
	})

	t.Run("value over state.max.value.bytes", func(t *testing.T) {
		// The measured problem: a guest capped at 64 MiB putting 32 MiB
		// values. The first one is refused.
		b, st := limitBolt(t, mod, instanceConfig("misbehave"), "statebomb",
			map[string]string{"bomb.value.bytes": strconv.Itoa(32 << 20), "bomb.puts": "64"})
		err := b.Execute(context.Background(), batchOf(1, "x"), &discard{})
		mustFailWith(t, b, err, ErrStateLimit,
			who+`state_put: value of 33554432 bytes (key "bomb/0"), over the limit state.max.value.bytes = 16777216`)
		if st.Len() != 0 {
			t.Fatalf("state holds %d keys, want 0", st.Len())
		}
	})

	t.Run("value over state.max.value.bytes in state_write", func(t *testing.T) {
		b, _ := limitBolt(t, mod, small(Limits{StateMaxValueBytes: 1000}), "statewrite", map[string]string{"bomb.value.bytes": "1001"})
		mustFailWith(t, b, b.Execute(context.Background(), batchOf(1, "x"), &discard{}), ErrStateLimit,
			who+`state_write: value of 1001 bytes (key "bomb/0"), over the limit state.max.value.bytes = 1000`)
	})

	t.Run("key over state.max.key.bytes", func(t *testing.T) {
		b, _ := limitBolt(t, mod, instanceConfig("misbehave"), "bigkey", nil)
		mustFailWith(t, b, b.Execute(context.Background(), batchOf(1, "x"), &discard{}), ErrStateLimit,
			who+"state_put: key of 131072 bytes, over the limit state.max.key.bytes = 65536")
	})

	t.Run("a state already over a lowered limit is named at prepare and may shrink", func(t *testing.T) {
		var logs logBuffer
		ic := small(Limits{StateMaxBytes: 1000})
		ic.Logger = logs.logger()
		b, err := mod.NewBolt(context.Background(), ic)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close(context.Background())
		tc := taskContext("misbehave", map[string]string{"mode": "statebomb", "bomb.value.bytes": "10", "bomb.puts": "3"}, wordStream)
		st := tc.State.(*MemoryState)
		st.Put([]byte("restored"), make([]byte, 2000)) // as from a checkpoint taken under a higher limit
		if err := b.Prepare(context.Background(), tc, &recorder{}); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, r := range logs.records(t) {
			found = found || strings.Contains(fmt.Sprint(r["msg"]), "host-side state holds 2008 bytes, over the limit state.max.bytes = 1000")
		}
		if !found {
			t.Fatalf("no warning about the restored state in %v", logs.records(t))
		}
		// Growing it further fails the instance.
		mustFailWith(t, b, b.Execute(context.Background(), batchOf(1, "x"), &discard{}), ErrStateLimit,
			who+"state_put: host-side state would reach 2024 bytes, over the limit state.max.bytes = 1000")
	})
}

// TestStateBombMemory (not parallel: it measures the heap) runs the state
// bomb under the default limits: 8 MiB values under new keys until the
// host stops it at state.max.bytes = 256 MiB. Before the limits the
// measured host RSS was 2 GiB for 64 puts of 32 MiB.
func TestStateBombMemory(t *testing.T) {
	// The call's deadline is not what this tests: 32 puts of 8 MiB took
	// over the default 10 s under the race detector on a loaded machine
	// (CI run 42), and the deadline then stopped the bomb before the limit.
	rt := newRuntime(t, Config{CallTimeout: 5 * time.Minute})
	mod := compile(t, rt, "misbehave")
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse
	}
	before, rssBefore := heap(), procStatus("VmRSS")
	b, st := limitBolt(t, mod, instanceConfig("misbehave"), "statebomb", nil)
	err := b.Execute(context.Background(), batchOf(1, "x"), &discard{})
	mustFailWith(t, b, err, ErrStateLimit, "state_put: host-side state would reach ", "over the limit state.max.bytes = 268435456")
	grown := heap() - before
	t.Logf("state bomb: state %d bytes in %d keys; Go heap in use grew by %d MiB; process RSS %s before, %s after, peak %s",
		st.Bytes(), st.Len(), grown>>20, rssBefore, procStatus("VmRSS"), procStatus("VmHWM"))
	if st.Bytes() > defaultStateMaxBytes {
		t.Fatalf("state holds %d bytes, over the limit", st.Bytes())
	}
	if grown > 2*defaultStateMaxBytes {
		t.Fatalf("the heap grew by %d MiB, want under %d MiB", grown>>20, 2*defaultStateMaxBytes>>20)
	}
	runtime.KeepAlive(st)
}

// procStatus is a field of /proc/self/status ("" where there is none).
func procStatus(field string) string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func TestEmitLimit(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Config{})
	mod := compile(t, rt, "misbehave")
	const who = "component misbehave task 7: ardea_execute: "

	// Tuples of a 512 KiB field (524312 bytes with the op header and the
	// field's type and length), one emit call each, until the host stops
	// the call at the 128th.
	b, _ := limitBolt(t, mod, instanceConfig("misbehave"), "emitflood", nil)
	out := &discard{}
	mustFailWith(t, b, b.Execute(context.Background(), batchOf(1, "x"), out), ErrEmitLimit,
		who+"emit: the call emitted 67111936 bytes, over the limit emit.max.bytes.per.call = 67108864")
	if out.n != 127 {
		t.Fatalf("%d tuples delivered, want the 127 within the limit", out.n)
	}

	ic := instanceConfig("misbehave")
	ic.Limits.EmitMaxBytesPerCall = 1 << 20
	b, _ = limitBolt(t, mod, ic, "emitflood", nil)
	mustFailWith(t, b, b.Execute(context.Background(), batchOf(1, "x"), &discard{}), ErrEmitLimit,
		who+"emit: the call emitted 1048624 bytes, over the limit emit.max.bytes.per.call = 1048576") // at the second

	// The limit is per call: an echo bolt re-emitting a 100-word batch
	// (4200 bytes of emit ops) runs any number of calls under an 8 KiB limit.
	echo := compile(t, rt, "echo")
	ic = instanceConfig("echo")
	ic.Limits.EmitMaxBytesPerCall = 8 << 10
	eb, err := echo.NewBolt(context.Background(), ic)
	if err != nil {
		t.Fatal(err)
	}
	defer eb.Close(context.Background())
	if err := eb.Prepare(context.Background(), taskContext("echo", nil, wordStream, countStream), &discard{}); err != nil {
		t.Fatal(err)
	}
	batch := wordBatch(100)
	for range 50 {
		if err := eb.Execute(context.Background(), batch, &discard{}); err != nil {
			t.Fatal(err)
		}
	}
}

// guestLines returns the guest's log records (stream log or stdout).
func guestLines(t *testing.T, logs *logBuffer, stream string) (lines []string, reports []map[string]any) {
	t.Helper()
	for _, r := range logs.records(t) {
		if r["stream"] != stream {
			continue
		}
		if _, ok := r["dropped_lines"]; ok {
			reports = append(reports, r)
			continue
		}
		lines = append(lines, fmt.Sprint(r["msg"]))
	}
	return lines, reports
}

func TestLogLimits(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Config{})
	mod := compile(t, rt, "misbehave")

	t.Run("a long line is cut at log.max.line.bytes", func(t *testing.T) {
		var logs logBuffer
		ic := instanceConfig("misbehave")
		ic.Logger = logs.logger()
		b, _ := limitBolt(t, mod, ic, "logflood", nil) // one line of 16 MiB
		if err := b.Execute(context.Background(), batchOf(1, "x"), &discard{}); err != nil {
			t.Fatal(err)
		}
		lines, reports := guestLines(t, &logs, "log")
		const mark = " ...[line of 16777216 bytes cut at log.max.line.bytes = 16384]"
		if len(lines) != 1 || len(reports) != 0 || len(lines[0]) != 16384 || !strings.HasSuffix(lines[0], mark) ||
			strings.Trim(strings.TrimSuffix(lines[0], mark), "x") != "" {
			t.Fatalf("%d lines (first %.80q... of %d bytes), %d reports; want one of 16384 bytes ending %q",
				len(lines), lines, len(strings.Join(lines, "")), len(reports), mark)
		}
	})

	flood := func(t *testing.T, mode, stream string) {
		var logs logBuffer
		ic := instanceConfig("misbehave")
		ic.Logger = logs.logger()
		const n, size = 2000, 1000
		b, _ := limitBolt(t, mod, ic, mode, map[string]string{"flood.lines": strconv.Itoa(n), "flood.line.bytes": strconv.Itoa(size)})
		t0 := time.Now()
		if err := b.Execute(context.Background(), batchOf(1, "x"), &discard{}); err != nil {
			t.Fatal(err)
		}
		u, _ := UsageOf(b)
		if err := b.Close(context.Background()); err != nil { // reports the drops of the last second
			t.Fatal(err)
		}
		seconds := time.Since(t0).Seconds()
		lines, reports := guestLines(t, &logs, stream)
		if stream != "log" { // the reports go to stream log
			_, logReports := guestLines(t, &logs, "log")
			reports = append(reports, logReports...)
		}
		var dropped, droppedBytes int64
		for _, r := range reports {
			mustContain(t, errors.New(fmt.Sprint(r["msg"])), "guest log lines", "in one second, over the limit log.max.bytes.per.second = 65536")
			dropped += int64(r["dropped_lines"].(float64))
			droppedBytes += int64(r["dropped_bytes"].(float64))
		}
		if int64(len(lines))+dropped != n || dropped != u.LogDroppedLines || droppedBytes != u.LogDroppedBytes {
			t.Fatalf("%d lines logged + %d dropped (usage: %d lines, %d bytes; reports: %d bytes), want %d in all",
				len(lines), dropped, u.LogDroppedLines, u.LogDroppedBytes, droppedBytes, n)
		}
		// At most 64 KiB in each second the flood lasted (and one report
		// line per second that dropped lines).
		windows := int(seconds) + 1
		if len(lines)*size > windows*defaultLogMaxBytesPerSecond || len(reports) > windows {
			t.Fatalf("%d lines of %d bytes and %d reports in %.1fs", len(lines), size, len(reports), seconds)
		}
		t.Logf("%s: %d of %d lines logged, %d dropped and reported in %d lines, in %.2fs", mode, len(lines), n, dropped, len(reports), seconds)
	}
	t.Run("a flood of log calls is dropped over log.max.bytes.per.second", func(t *testing.T) { flood(t, "logflood", "log") })
	t.Run("a flood of stdout lines is dropped over log.max.bytes.per.second", func(t *testing.T) { flood(t, "printflood", "stdout") })
}

// TestLogGate checks the per-second budget with a clock the test moves.
func TestLogGate(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	var now int64 = 1
	g := newLogGate(context.Background(), logs.logger(), 100, func() int64 { return now })
	line := make([]byte, 30)
	for range 10 { // 3 fit the first second, 7 are dropped
		g.write(slog.LevelInfo, line, "log")
	}
	g.report(false) // the second is not over: nothing yet
	now += int64(time.Second)
	g.report(false)
	g.report(false) // one report per second
	for range 2 {
		g.write(slog.LevelInfo, line, "log")
	}
	g.report(true) // closing: nothing was dropped in this second
	var msgs []string
	for _, r := range logs.records(t) {
		msgs = append(msgs, fmt.Sprint(r["msg"]))
	}
	// 3 lines, the report, 2 lines.
	const report = "dropped 7 guest log lines (210 bytes) in one second, over the limit log.max.bytes.per.second = 100"
	if len(msgs) != 6 || msgs[3] != report || g.droppedLines.Load() != 7 || g.droppedBytes.Load() != 210 {
		t.Fatalf("logged %q, dropped %d lines %d bytes; want 3 lines, %q, 2 lines", msgs, g.droppedLines.Load(), g.droppedBytes.Load(), report)
	}
}

// memoryMin is the initial size of a module's memory, in pages.
func memoryMin(m *Module) uint32 {
	m.c.mu.Lock()
	defer m.c.mu.Unlock()
	for _, cm := range m.c.byEngine {
		return cm.ExportedMemories()["memory"].Min()
	}
	return 0
}

// TestMemoryLimitNamedInEveryLanguage: a guest that runs out of memory
// fails with ErrMemoryLimit and an error naming wasm.memory.pages, its
// value and the use, whatever its language: the Go guest's own message
// is not needed, the instance's allocator sees the refused grow.
func TestMemoryLimitNamedInEveryLanguage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt := newRuntime(t, Config{})

	// Hand-written: what C's abort and Rust's alloc error handler come
	// down to, a refused memory.grow followed by unreachable; one grows
	// 16 pages at a time to the limit, one asks for 1000 pages at once
	// (far from the limit in use: only the refused grow tells).
	const (
		opIf, opBr, opLoop, opMemGrow, opI32Eq, opEmpty = 0x04, 0x0C, 0x03, 0x40, 0x46, 0x40
	)
	growUntilRefused := func(pages byte) []byte {
		return []byte{opLoop, opEmpty,
			opI32Const, pages, opMemGrow, 0, opI32Const, 0x7F, opI32Eq, opIf, opEmpty, opUnreachable, opEnd,
			opBr, 0, opEnd, opI32Const, 0, opEnd}
	}
	raw := []struct {
		name string
		code []byte
		want string
	}{
		{"grow-16", growUntilRefused(16), "memory.grow to 66 pages was refused at the limit wasm.memory.pages = 64 (4 MiB, 50 pages in use)"},
		{"grow-1000", []byte{opI32Const, 0xE8, 0x07, opMemGrow, 0, opI32Const, 0x7F, opI32Eq, opIf, opEmpty, opUnreachable, opEnd, opI32Const, 0, opEnd},
			"memory.grow to 1002 pages was refused at the limit wasm.memory.pages = 64 (4 MiB, 2 pages in use)"},
	}
	for _, c := range raw {
		mod, err := rt.CompileBytes(ctx, c.name+".wasm", rawBolt(c.code))
		if err != nil {
			t.Fatal(err)
		}
		ic := instanceConfig(c.name)
		ic.MemoryLimitPages = 64
		b, err := mod.NewBolt(ctx, ic)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Prepare(context.Background(), taskContext(c.name, nil, wordStream), &recorder{}); err != nil {
			t.Fatal(err)
		}
		mustFailWith(t, b, b.Execute(context.Background(), batchOf(1, "x"), &discard{}), ErrMemoryLimit,
			"component "+c.name+" task 7: call ardea_execute: guest ran out of memory: "+c.want, "wasm error: unreachable")
	}

	// The SDKs' probe bolts, given 16 pages (1 MiB) over their initial
	// memory, asked to take a 4 MiB batch: their allocators fail in
	// ardea_buffer (C: "ardea: out of memory" then abort, Rust: "memory
	// allocation of N bytes failed" then abort, AssemblyScript: abort).
	for _, lang := range []string{"c", "rust", "assemblyscript"} {
		mod, err := rt.Compile(ctx, "../wasm-sdk/"+lang+"/testdata/probe_bolt.wasm")
		if err != nil {
			t.Fatal(err)
		}
		pages := memoryMin(mod) + 16
		ic := instanceConfig("probe")
		ic.MemoryLimitPages = pages
		b, err := mod.NewBolt(ctx, ic)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Prepare(context.Background(), taskContext("probe", nil, wordStream), &recorder{}); err != nil {
			t.Fatal(err)
		}
		err = b.Execute(context.Background(), batchOf(1, strings.Repeat("x", 4<<20)), &discard{})
		mustFailWith(t, b, err, ErrMemoryLimit, "component probe task 7: call ardea_buffer",
			"guest ran out of memory: memory.grow to ", fmt.Sprintf(" pages was refused at the limit wasm.memory.pages = %d (", pages), " pages in use)")
		t.Logf("%s: %s", lang, strings.SplitN(err.Error(), "\n", 2)[0])
	}

	// A module whose memory starts over the limit is refused up front.
	mod, err := rt.CompileBytes(ctx, "two-pages.wasm", rawBolt(ret0()))
	if err != nil {
		t.Fatal(err)
	}
	ic := instanceConfig("tiny")
	ic.MemoryLimitPages = 1
	_, err = mod.NewBolt(ctx, ic)
	mustContain(t, err, "component tiny task 7: module two-pages.wasm starts with 2 pages of memory (128 KiB), over the limit wasm.memory.pages = 1")
}

func TestLimitsChecked(t *testing.T) {
	t.Parallel()
	_, err := NewRuntime(context.Background(), Config{Limits: Limits{LogMaxLineBytes: 10}})
	mustContain(t, err, "log.max.line.bytes 10: want at least 128")
	rt := newRuntime(t, Config{})
	ic := instanceConfig("echo")
	ic.Limits.StateMaxValueBytes = 1 << 31
	_, err = compile(t, rt, "echo").NewBolt(context.Background(), ic)
	mustContain(t, err, "state.max.value.bytes 2147483648 exceeds the 2 GiB ABI limit (component echo task 7)")
}

func TestPausedFor(t *testing.T) {
	t.Parallel()
	const tick = 100 * time.Millisecond
	for _, c := range []struct {
		elapsed time.Duration
		want    time.Duration
	}{
		{50 * time.Millisecond, 0},                 // woken early
		{100 * time.Millisecond, 0},                // on time
		{190 * time.Millisecond, 0},                // late, but by less than a tick: a scheduling delay
		{5100 * time.Millisecond, 5 * time.Second}, // stopped for 5s
	} {
		if got := time.Duration(pausedFor(int64(c.elapsed), tick)); got != c.want {
			t.Errorf("pausedFor(%v, %v) = %v, want %v", c.elapsed, tick, got, c.want)
		}
	}
}

// lineWaiter reads a child's output lines.
type lineWaiter struct {
	t     *testing.T
	lines chan string
}

func newLineWaiter(t *testing.T, r *bufio.Scanner) *lineWaiter {
	w := &lineWaiter{t: t, lines: make(chan string, 1024)}
	go func() {
		defer close(w.lines)
		for r.Scan() {
			w.lines <- r.Text()
		}
	}()
	return w
}

// next returns the next line containing s.
func (w *lineWaiter) next(s string) string {
	w.t.Helper()
	timeout := time.After(2 * time.Minute) // a guard: the child is hung
	for {
		select {
		case l, ok := <-w.lines:
			if !ok {
				w.t.Fatalf("the child's output ended before a line with %q", s)
			}
			if strings.Contains(l, s) {
				return l
			}
		case <-timeout:
			w.t.Fatalf("no line with %q from the child", s)
		}
	}
}
