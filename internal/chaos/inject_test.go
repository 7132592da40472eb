package chaos

// The faults a row injects: one method of rowRun per kind (runRow picks
// it by the row's Fault), each making its moment happen by construction
// (a watched event, a phase of an operation), not by the machine's speed.

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// hostKill: kill -9 of a container (Checkpoint: just after a checkpoint
// begins).
func (r *rowRun) hostKill(i int, p Pick) {
	time.Sleep(p.Delay) // the seed's "when"
	var ckpt <-chan Event
	if r.row.Fault == Checkpoint {
		ckpt = r.w.Arm(func(e Event) bool { return e.Kind == "cmd" && e.Cmd.Op == "checkpoint" })
		select {
		case e := <-ckpt:
			r.note("kill %d: checkpoint %d began", i+1, e.Cmd.Epoch)
		case <-time.After(time.Minute):
			r.fatalf("no checkpoint began within a minute")
		}
	}
	st := r.running("a kill")
	c := r.pickContainer(st, p)
	faultAt := time.Now()
	if err := KillHost(c.PID); err != nil {
		r.fatalf("kill container %d (pid %d): %v", c.ID, c.PID, err)
	}
	r.res.Injected++
	r.res.RecoverySec = append(r.res.RecoverySec, r.recovered(faultAt, []int{c.PID}, rollbacks(st), r.row.Mode == EffectivelyOnce))
}

// daemonKill: kill -9 of the daemon (with host: of a container first,
// then the daemon after the seed's gap), restarted on the same data dir.
func (r *rowRun) daemonKill(i int, p Pick, host bool) {
	time.Sleep(p.Delay)
	st := r.running("the daemon kill")
	hosts := []int{}
	for _, c := range st.Containers {
		hosts = append(hosts, c.PID)
	}
	faultAt := time.Now()
	if host {
		c := r.pickContainer(st, p)
		if err := KillHost(c.PID); err != nil {
			r.fatalf("kill container %d: %v", c.ID, err)
		}
		time.Sleep(p.Gap)
	}
	if err := r.d.Kill(); err != nil {
		r.fatalf("kill -9 the daemon: %v", err)
	}
	r.res.Injected++
	d, err := StartDaemon(r.t.Context(), r.d.Bin, r.d.CacheDir, r.data, r.log)
	if err != nil {
		r.fatalf("restart the daemon on its data dir: %v", err)
	}
	r.d = d
	r.watch()
	r.res.RecoverySec = append(r.res.RecoverySec, r.recovered(faultAt, hosts, 0, false))
	if st := r.status(); st.Checkpoints != nil {
		r.note("daemon kill %d: resumed from checkpoint %d", i+1, st.Checkpoints.RestoredFrom)
	}
}

// hostStop: SIGSTOP of a container for the seed's hold (longer than the
// 2 s heartbeat timeout), then SIGCONT.
func (r *rowRun) hostStop(i int, p Pick) {
	time.Sleep(p.Delay)
	st := r.running("the stop")
	c := r.pickContainer(st, p)
	faultAt := time.Now()
	if err := StopHost(c.PID); err != nil {
		r.fatalf("SIGSTOP container %d: %v", c.ID, err)
	}
	r.res.Injected++
	hold := 2500*time.Millisecond + p.Hold/2
	cont := time.AfterFunc(hold, func() { ContHost(c.PID) })
	r.t.Cleanup(func() { cont.Stop(); ContHost(c.PID) })
	r.res.RecoverySec = append(r.res.RecoverySec, r.recovered(faultAt, nil, rollbacks(st), false))
	// Flowing again may come before the SIGCONT (the stopped container
	// was fenced and replaced): make sure it has been sent.
	r.poll(hold+time.Minute, "the SIGCONT", func() (bool, string) { return time.Since(faultAt) > hold, "holding" })
	replaced := !Alive(c.PID)
	r.note("stop %d: container %d (pid %d) stopped %.1fs; replaced by the system: %v", i+1, c.ID, c.PID, hold.Seconds(), replaced)
}

// diskFull: the JetStream store's tmpfs filled for the seed's hold, then
// freed.
func (r *rowRun) diskFull(p Pick) {
	time.Sleep(p.Delay)
	st := r.running("filling the disk")
	dir := filepath.Join(r.data, "nats")
	faultAt := time.Now()
	n, release, err := FillDisk(dir)
	if err != nil {
		r.fatalf("fill %s: %v", dir, err)
	}
	r.res.Injected++
	r.note("filled %s with %d MiB (%d bytes free) for %.1fs", dir, n>>20, FreeBytes(dir), p.Hold.Seconds())
	var once sync.Once
	free := func() {
		once.Do(func() {
			if err := release(); err != nil {
				r.t.Errorf("free the disk: %v", err)
			}
		})
	}
	timer := time.AfterFunc(p.Hold, free)
	defer func() { timer.Stop(); free() }()
	r.res.RecoverySec = append(r.res.RecoverySec, r.recovered(faultAt, nil, rollbacks(st), false))
	r.poll(p.Hold+time.Minute, "the disk freed", func() (bool, string) { return time.Since(faultAt) > p.Hold, "full" })
}

// withCustomSection copies a module with a custom section appended: the
// same code under another version (sha256).
func (r *rowRun) withCustomSection(src string) string {
	b, err := os.ReadFile(src)
	if err != nil {
		r.t.Fatal(err)
	}
	// The same bytes for the same row and seed: compiled once, cached.
	name, payload := "ardea-chaos", []byte(fmt.Sprintf("%s seed %d", r.row.Name(), r.row.Seed))
	body := append(binary.AppendUvarint(nil, uint64(len(name))), name...)
	body = append(body, payload...)
	b = append(b, 0)
	b = binary.AppendUvarint(b, uint64(len(body)))
	b = append(b, body...)
	out := filepath.Join(r.dir, filepath.Base(src))
	if err := os.WriteFile(out, b, 0o644); err != nil {
		r.t.Fatal(err)
	}
	return out
}

// swap: kill -9 of a container in a phase of `ardea swap` of seqstate
// (the same code under a new version): as the swap begins, as the hosts
// swap the tasks, or while the new version is on probation.
func (r *rowRun) swap(p Pick) {
	mod := r.withCustomSection(filepath.Join(repoRoot(), "examples", "keyed", "go", "seqstate.wasm"))
	time.Sleep(p.Delay)
	st := r.running("the swap")
	c := r.pickContainer(st, p)
	swapCmd := r.w.Arm(func(e Event) bool { return e.Kind == "cmd" && e.Cmd.Op == "swap" })
	// Armed before the swap starts: a host may report its tasks swapped
	// before the watcher has seen the command (the row's only swap).
	swapped := r.w.Arm(func(h Event) bool {
		s := h.HB.Swap
		return h.Kind == "hb" && s != nil && s.Epoch != 0 && s.Targeted > 0 && s.Swapped >= s.Targeted
	})
	begins := strings.Count(Tail(r.d.LogPath, 1<<30), `"msg":"swap begins"`)
	cmd, err := r.d.Start("swap", r.name, "seqstate", mod, "--probation", probation.String())
	if err != nil {
		r.fatalf("start ardea swap: %v", err)
	}
	var faultAt time.Time
	switch r.row.Fault {
	case SwapStart:
		r.poll(time.Minute, "the daemon to log \"swap begins\"", func() (bool, string) {
			if cmd.Done() {
				code, out, _ := cmd.Wait(0)
				r.fatalf("ardea swap ended (exit %d) before the fault: %s", code, out)
			}
			return strings.Count(Tail(r.d.LogPath, 1<<30), `"msg":"swap begins"`) > begins, "not yet"
		})
	case SwapTasks:
		r.await(swapCmd, cmd, "the swap command to the hosts")
	case SwapProbation:
		r.await(swapped, cmd, "a host to report its tasks swapped")
		time.Sleep(p.Delay % (probation / 2)) // into the probation
		if cmd.Done() {
			r.fatalf("the swap finished its probation before the fault")
		}
	}
	st = r.running("the kill in the swap")
	c = r.pickContainer(st, p)
	faultAt = time.Now()
	if err := KillHost(c.PID); err != nil {
		r.fatalf("kill container %d: %v", c.ID, err)
	}
	r.res.Injected++
	r.res.RecoverySec = append(r.res.RecoverySec, r.recovered(faultAt, []int{c.PID}, rollbacks(st), r.row.Mode == EffectivelyOnce))
	code, out, err := cmd.Wait(hangLimit)
	if err != nil {
		r.fatalf("ardea swap: %v", err)
	}
	_, hist, _, _ := r.d.CLI("history", r.name)
	r.note("ardea swap exit %d: %s; history: %s", code, firstLine(out), lastLine(hist))
}

// await waits for an armed event; the operation ending first, or a
// minute passing, fails the row.
func (r *rowRun) await(ch <-chan Event, op *Command, what string) Event {
	deadline := time.After(time.Minute)
	for {
		select {
		case e := <-ch:
			return e
		case <-deadline:
			r.fatalf("%s: not within a minute", what)
		case <-time.After(25 * time.Millisecond):
			if op != nil && op.Done() {
				code, out, _ := op.Wait(0)
				r.fatalf("%s: the operation ended first (exit %d): %s", what, code, out)
			}
		}
	}
}

// replan: kill -9 of a container in a phase of `ardea update
// --component-parallelism seqstate:3` or of `ardea apply` (a changed
// file: seqstate at 3 tasks and the sink's flush interval, a replan with
// the spouts paused). Phases: prepare (the spouts pause, or a live
// switch's prepare is sent), handoff (state handed off by key group),
// switch (a host runs the new plan).
func (r *rowRun) replan(p Pick) {
	phase := r.row.Phase
	switch r.row.Fault {
	case RescalePrepare:
		phase = PhasePrepare
	case RescaleHandoff:
		phase = PhaseHandoff
	case RescaleSwitch:
		phase = PhaseSwitch
	}
	var args []string
	if r.row.Fault == Apply {
		changed := r.writeTopology("changed.yaml", []string{"seqstate.parallelism=3", "out.flush_interval=500ms"})
		args = []string{"apply", r.name, changed}
	} else {
		args = []string{"update", r.name, "--component-parallelism", "seqstate:3"}
	}
	time.Sleep(p.Delay)
	st := r.running("the " + args[0])
	rev0 := st.PlanRevision
	opStart := uint64(time.Now().UnixNano())
	var ch <-chan Event
	switch phase {
	case PhasePrepare:
		ch = r.w.Arm(func(e Event) bool {
			return e.Kind == "cmd" && (e.Cmd.Op == "deactivate" || e.Cmd.Op == "switch-prepare")
		})
	case PhaseHandoff:
		ch = r.w.Arm(func(e Event) bool {
			return (e.Kind == "cmd" && e.Cmd.Op == "handoff") || (e.Kind == "hb" && e.HB.HandoffDone >= opStart)
		})
	case PhaseSwitch:
		ch = r.w.Arm(func(e Event) bool { return e.Kind == "hb" && e.HB.PlanRevision > rev0 })
	}
	began := time.Now()
	cmd, err := r.d.Start(args...)
	if err != nil {
		r.fatalf("start ardea %s: %v", args[0], err)
	}
	e := r.await(ch, cmd, "the "+phase+" phase of ardea "+args[0])
	reached := time.Since(began)
	st = r.running("the kill in the " + phase + " phase")
	c := r.pickContainer(st, p)
	faultAt := time.Now()
	if err := KillHost(c.PID); err != nil {
		r.fatalf("kill container %d: %v", c.ID, err)
	}
	r.res.Injected++
	r.note("%s: killed container %d in the %s phase (%s %s, %.1f s in)", args[0], c.ID, phase, e.Kind, e.Cmd.Op, reached.Seconds())
	r.res.RecoverySec = append(r.res.RecoverySec, r.recovered(faultAt, []int{c.PID}, rollbacks(st), r.row.Mode == EffectivelyOnce))
	code, out, err := cmd.Wait(hangLimit)
	if err != nil {
		r.fatalf("ardea %s: %v", args[0], err)
	}
	r.note("ardea %s exit %d: %s", args[0], code, firstLine(out))
}

// damageCheckpoint: right after a checkpoint becomes global, its task
// snapshots are overwritten with garbage (corrupt) or deleted, then a
// container is killed so that a rollback must restore.
func (r *rowRun) damageCheckpoint(p Pick) {
	ctx := context.Background()
	store, err := OpenCheckpoints(ctx, r.d.NATS, tenant, r.d.NATSOptions(tenant)...)
	if err != nil {
		r.fatalf("open the checkpoint store: %v", err)
	}
	defer store.Close()
	time.Sleep(p.Delay)
	st := r.running("damaging a checkpoint")
	c := r.pickContainer(st, p)
	e := r.await(r.w.Arm(func(e Event) bool { return e.Kind == "cmd" && e.Cmd.Op == "global" && e.Cmd.Epoch >= 2 }), nil, "a global checkpoint")
	// The container to kill is stopped first: while it cannot store, no
	// newer checkpoint becomes global before the kill, whatever the
	// machine's speed (the next one begins an interval, 1 s, after this
	// one began). SIGKILL ends it stopped.
	if err := StopHost(c.PID); err != nil {
		r.fatalf("SIGSTOP container %d: %v", c.ID, err)
	}
	r.t.Cleanup(func() { ContHost(c.PID) })
	id := e.Cmd.Epoch
	names, err := store.Snapshots(ctx, r.name, id)
	if err != nil || len(names) == 0 {
		r.fatalf("the snapshots of global checkpoint %d: %v (%d found)", id, err, len(names))
	}
	ids, err := store.Checkpoints(ctx, r.name)
	if err != nil {
		r.fatalf("list checkpoints: %v", err)
	}
	var older []uint64
	for _, o := range ids {
		if o < id {
			if s, _ := store.Snapshots(ctx, r.name, o); len(s) >= len(names) {
				older = append(older, o)
			}
		}
	}
	if r.row.Fault == CkptCorrupt {
		err = store.Corrupt(ctx, names)
	} else {
		err = store.Delete(ctx, names)
	}
	if err != nil {
		r.fatalf("damage checkpoint %d: %v", id, err)
	}
	// (The status may not show id global yet: it is published after the
	// announcement the watcher saw.)
	if st = r.status(); st.Checkpoints == nil || st.Checkpoints.Global > id {
		r.fatalf("a checkpoint newer than %d (the damaged one) is global before the kill: %+v: the injection missed", id, st.Checkpoints)
	}
	faultAt := time.Now()
	if err := KillHost(c.PID); err != nil {
		r.fatalf("kill container %d: %v", c.ID, err)
	}
	r.res.Injected++
	// With no complete older checkpoint left nothing can be restored:
	// the row must then end FAILED with the reason (or, if something
	// did restore, exact).
	r.mayFail = len(older) == 0
	r.note("%s %d snapshots of global checkpoint %d; complete older checkpoints: %v", map[bool]string{true: "corrupted", false: "deleted"}[r.row.Fault == CkptCorrupt], len(names), id, older)
	r.res.RecoverySec = append(r.res.RecoverySec, r.recovered(faultAt, []int{c.PID}, rollbacks(st), true))
}

// guestRow: a bolt that abuses host resources (testdata/hog). The row
// passes when the topology ends FAILED with a message that names the
// limit, or when the abuse stays bounded (state: the host's memory; log:
// the container's log files) although the guest tried far more.
func (r *rowRun) guestRow() {
	hog := hogModule(r.t)
	const lines, rate = 300, 50 // 1 MiB of abuse a line: 300 MiB in 6 s
	in := filepath.Join(r.dir, "in.txt")
	if err := os.WriteFile(in, []byte(strings.Repeat("x\n", lines)), 0o644); err != nil {
		r.t.Fatal(err)
	}
	mode := "state"
	if r.row.Fault == GuestLogFlood {
		mode = "log"
	}
	topo := filepath.Join(r.dir, "hog.yaml")
	spec := fmt.Sprintf(`name: %s
config:
  topology.reliability: %s
  topology.checkpoint.interval: 2s
spouts:
  - name: lines
    module: builtin:file
    config: {path: %q, rate: "%d"}
bolts:
  - name: hog
    module: %q
    config: {hog.mode: %s}
    inputs: [{from: lines}]
`, r.name, r.row.Mode, in, rate, hog, mode)
	if err := os.WriteFile(topo, []byte(spec), 0o644); err != nil {
		r.t.Fatal(err)
	}
	if code, out, errOut, err := r.d.CLI("submit", topo, "--name", r.name); err != nil || code != 0 {
		r.fatalf("ardea submit: exit %d %v: %s %s", code, err, out, errOut)
	}
	faultAt := time.Now()
	var st Status
	var maxRSS int64
	var executed int64
	r.poll(hangLimit, "the abusive guest's topology to end", func() (bool, string) {
		var err error
		st, err = r.d.Status(r.name)
		if err != nil {
			return false, err.Error()
		}
		for _, c := range st.Containers {
			maxRSS = max(maxRSS, RSS(c.PID))
		}
		for _, in := range st.Instances("hog") {
			executed = max(executed, in.Executed)
		}
		return Terminal(st.State), fmt.Sprintf("state %s, hog executed %d", st.State, executed)
	})
	r.res.Injected = 1
	r.res.Terminal, r.res.Message = st.State, firstLine(st.Errors())
	r.res.RecoverySec = []float64{time.Since(faultAt).Seconds()}
	code, _, _, err := r.d.CLI("wait", r.name, "--timeout", "1m")
	if err != nil {
		r.fatalf("ardea wait: %v", err)
	}
	r.res.WaitExit = code
	logs, _ := filepath.Glob(filepath.Join(r.data, "logs", r.name+"_*"))
	var logBytes int64
	for _, l := range logs {
		logBytes += size(l)
	}
	r.note("hog (%s) executed %d tuples (%d MiB of abuse); host RSS peak %d MiB; container logs %d KiB", mode, executed, executed, maxRSS>>20, logBytes>>10)
	named := regexp.MustCompile(`(?i)limit`).MatchString(st.Errors()) && regexp.MustCompile(`(?i)`+mode).MatchString(st.Errors())
	switch {
	case st.State == StateFailed && named && code != 0:
		r.res.Verdict = Pass
	case st.State == StateFailed && named:
		r.fatalf("FAILED naming the limit, but ardea wait exits 0")
	case st.State == StateFailed:
		r.fatalf("FAILED without naming a %s limit: %s", mode, firstLine(st.Errors()))
	case mode == "state" && executed >= 200 && maxRSS < 256<<20:
		r.res.Verdict = Pass // bounded
	case mode == "log" && executed >= 128 && logBytes < 32<<20:
		r.res.Verdict = Pass // bounded
	default:
		r.fatalf("ended %s with the abuse unbounded: the guest %s %d MiB (host RSS peak %d MiB, logs %d MiB) and no limit stopped it",
			st.State, map[string]string{"state": "put", "log": "logged"}[mode], executed, maxRSS>>20, logBytes>>20)
	}
	r.res.Why = strings.Join(r.notes, "; ")
}
