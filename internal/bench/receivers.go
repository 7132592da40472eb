package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ardea-dev/ardea/sinks"
)

// receivers are local stand-ins for a deployment's metrics back ends, so
// that `ardea bench wordcount --metrics on` runs with every sink enabled
// and connected: a TCP server reading Graphite lines, a Scribe server, an
// OTLP/HTTP endpoint, a file, and a Prometheus exposition scraped every
// second.
type receivers struct {
	cfg   *sinks.Config
	extra map[string]sinks.Sink
	stop  func()
	// What arrived, for the report.
	graphiteLines, scribeEntries, otlpExports, scrapes atomic.Int64
}

func startReceivers(ctx context.Context, dir string, interval time.Duration, log *slog.Logger) (*receivers, error) {
	r := &receivers{}
	var closers []func()
	fail := func(err error) (*receivers, error) {
		for _, c := range closers {
			c()
		}
		return nil, err
	}
	// Graphite: read and count lines.
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(err)
	}
	closers = append(closers, func() { gl.Close() })
	go func() {
		for {
			c, err := gl.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					r.graphiteLines.Add(1)
				}
			}()
		}
	}()
	// Scribe.
	stopScribe, scribeAddr, err := sinks.ServeScribe("127.0.0.1:0", func(es []sinks.ScribeEntry) bool {
		r.scribeEntries.Add(int64(len(es)))
		return true
	})
	if err != nil {
		return fail(err)
	}
	closers = append(closers, stopScribe)
	// OTLP/HTTP: accept every export.
	ol, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(err)
	}
	osrv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		r.otlpExports.Add(1)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	})}
	go func() { _ = osrv.Serve(ol) }()
	closers = append(closers, func() { _ = osrv.Close() })
	// Prometheus: the exposition, scraped every second.
	prom := sinks.NewPrometheus()
	// The scraper runs until the receivers close (their closers cancel
	// it), not until ctx ends.
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				w := &discardResponse{h: http.Header{}}
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "/metrics", nil)
				prom.ServeHTTP(w, req)
				r.scrapes.Add(1)
			}
		}
	})
	closers = append(closers, func() { cancel(); wg.Wait() })
	path := filepath.Join(dir, "metrics.jsonl")
	_ = os.Remove(path)
	r.cfg = &sinks.Config{
		Interval: sinks.Duration(interval),
		Sinks: map[string]map[string]string{
			"graphite": {"address": gl.Addr().String()},
			"scribe":   {"address": scribeAddr},
			"otlp":     {"endpoint": "http://" + ol.Addr().String() + "/v1/metrics"},
			"file":     {"path": path},
		},
	}
	r.extra = map[string]sinks.Sink{"prometheus": prom}
	r.stop = func() {
		for _, c := range closers {
			c()
		}
	}
	return r, nil
}

// check reports a sink that received nothing: the run would not have
// measured it.
func (r *receivers) check() error {
	var errs []error
	for name, n := range map[string]int64{"graphite": r.graphiteLines.Load(), "scribe": r.scribeEntries.Load(),
		"otlp": r.otlpExports.Load(), "prometheus scrapes": r.scrapes.Load()} {
		if n == 0 {
			errs = append(errs, fmt.Errorf("bench: the %s receiver got nothing", name))
		}
	}
	return errors.Join(errs...)
}

type discardResponse struct{ h http.Header }

func (d *discardResponse) Header() http.Header         { return d.h }
func (d *discardResponse) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardResponse) WriteHeader(int)             {}
