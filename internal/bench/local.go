package bench

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"syscall"
	"time"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/examples/wordcount"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/daemon"
)

// LocalOptions configures `ardea bench wordcount --local`: the word count
// through a real daemon and real `ardea host` processes.
type LocalOptions struct {
	Duration, Warmup time.Duration
	Containers       int
	Lang             string
	// HostPath and HostArgs start a container process (the ardea binary
	// and "host").
	HostPath string
	HostArgs []string
	Logger   *slog.Logger
}

// LocalResult is what --local reports.
type LocalResult struct {
	TuplesPerSec float64 `json:"tuples_per_sec"`
	Containers   int     `json:"containers"`
	Lang         string  `json:"lang"`
	// RecoverySec is the time from `kill -9` of a container to its
	// instances executing tuples again (heartbeats come every 0.5 s, so
	// the figure is accurate to about half a second).
	RecoverySec float64 `json:"recovery_sec"`
	DurationSec float64 `json:"duration_sec"`
}

// WordCountLocal runs the benchmark against an in-process daemon.
func WordCountLocal(ctx context.Context, o LocalOptions) (*LocalResult, error) {
	if o.Duration <= 0 {
		o.Duration = 10 * time.Second
	}
	if o.Warmup <= 0 {
		o.Warmup = 2 * time.Second
	}
	if o.Containers <= 0 {
		o.Containers = 2
	}
	if o.Lang == "" {
		o.Lang = "go"
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dir, err := os.MkdirTemp("", "ardea-bench-local-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	d, err := daemon.Start(ctx, daemon.Options{DataDir: dir, Listen: "127.0.0.1:0", HostPath: o.HostPath, HostArgs: o.HostArgs, Logger: log})
	if err != nil {
		return nil, err
	}
	// Cleanups below run however the bench ends, ctx cancelled or not, each
	// bounded.
	cleanupCtx := context.WithoutCancel(ctx)
	defer func() {
		cctx, cancel := context.WithTimeout(cleanupCtx, 30*time.Second)
		defer cancel()
		d.Close(cctx)
	}()
	split, count, err := wordcount.Modules(o.Lang)
	if err != nil {
		return nil, err
	}
	b := ardea.NewBuilder("bench-local")
	b.Set("topology.packing.containers", fmt.Sprint(o.Containers))
	b.Spout("lines", ardea.BuiltinPrefix+"generator").Config("rate", "0").Config("count", "0")
	b.Bolt("split", "split.wasm").Shuffle("lines").Output("default", "word")
	b.Bolt("count", "count.wasm").Parallelism(2).Fields("split", "word").Output("default", "word", "count")
	t, err := b.BuildWith(ardea.ValidateOptions{SkipModuleCheck: true})
	if err != nil {
		return nil, err
	}
	spec, err := t.Format()
	if err != nil {
		return nil, err
	}
	c := d.Client() // the daemon's admin token: the API takes one on every call
	if _, err := c.Submit(ctx, api.SubmitRequest{Name: "bench", Spec: string(spec),
		Modules: map[string][]byte{"split": split, "count": count}}); err != nil {
		return nil, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(cleanupCtx, 30*time.Second)
		defer cancel()
		c.Action(cctx, "bench", "kill", url.Values{}, nil)
	}()

	counted := func() (int64, *api.Status, error) {
		st, err := c.Status(ctx, "bench")
		if err != nil {
			return 0, nil, err
		}
		var n int64
		for _, ct := range st.Containers {
			for _, in := range ct.Instances {
				if len(in.Name) > 6 && in.Name[:6] == "count/" {
					n += in.Executed
				}
			}
		}
		return n, &st, nil
	}
	// Wait for words to flow, then warm up, then measure.
	if err := poll(ctx, time.Minute, func() (bool, error) { n, _, err := counted(); return n > 0, err }); err != nil {
		return nil, fmt.Errorf("bench --local: no words counted: %w", err)
	}
	sleep(ctx, o.Warmup)
	n0, _, err := counted()
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	sleep(ctx, o.Duration)
	n1, st, err := counted()
	if err != nil {
		return nil, err
	}
	res := &LocalResult{TuplesPerSec: float64(n1-n0) / time.Since(t0).Seconds(), Containers: len(st.Containers),
		Lang: o.Lang, DurationSec: o.Duration.Seconds()}

	// Recovery: kill -9 the last container, wait for its instances to
	// execute again.
	victim := st.Containers[len(st.Containers)-1]
	if err := syscall.Kill(victim.PID, syscall.SIGKILL); err != nil {
		return nil, fmt.Errorf("bench --local: kill container %d (pid %d): %w", victim.ID, victim.PID, err)
	}
	killed := time.Now()
	err = poll(ctx, time.Minute, func() (bool, error) {
		st, err := c.Status(ctx, "bench")
		if err != nil {
			return false, err
		}
		for _, ct := range st.Containers {
			if ct.ID != victim.ID || ct.PID == victim.PID || ct.PID == 0 {
				continue
			}
			for _, in := range ct.Instances {
				if in.Executed > 0 {
					return true, nil
				}
			}
		}
		return false, nil
	})
	if err != nil {
		return nil, fmt.Errorf("bench --local: container %d did not come back: %w", victim.ID, err)
	}
	res.RecoverySec = time.Since(killed).Seconds()
	return res, nil
}

func poll(ctx context.Context, limit time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(limit)
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("gave up after %v", limit)
		}
		sleep(ctx, 20*time.Millisecond)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
