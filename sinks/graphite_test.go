package sinks

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/testutil"
)

// lineServer accepts connections and records every line received.
type lineServer struct {
	ln    net.Listener
	mu    sync.Mutex
	lines []string
	conns []net.Conn
}

// stop closes the listener and every connection (carbon goes away).
func (s *lineServer) stop() {
	s.ln.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.Close()
	}
}

func startLineServer(t *testing.T, addr string) *lineServer {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s := &lineServer{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			go func() {
				defer c.Close()
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					s.mu.Lock()
					s.lines = append(s.lines, sc.Text())
					s.mu.Unlock()
				}
			}()
		}
	}()
	t.Cleanup(s.stop)
	return s
}

func (s *lineServer) got() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.lines...)
}

// closedAddr is an address nobody listens on (until a test does).
func closedAddr(t *testing.T) string {
	t.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))
}

// graphiteLog sends the sink's log to the test's output.
func graphiteLog(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), nil))
}

func newTestGraphite(t *testing.T, cfg graphiteConfig) *graphite {
	t.Helper()
	g, err := newGraphite(cfg, graphiteLog(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// testBatch is five samples of topology "wc"; the scribe tests use it too.
func testBatch(at time.Time, execDelta float64) *Batch {
	return &Batch{Time: at, Topology: "wc", Container: 1, Samples: []Sample{
		{Name: "__execute-count", Kind: Counter, Topology: "wc", Component: "count", Task: 3, Container: 1, Value: 1000, Delta: execDelta},
		{Name: "__execute-latency", Kind: Gauge, Topology: "wc", Component: "count", Task: 3, Container: 1, Value: 1250.5},
		{Name: "__emit-count", Stream: "default", Kind: Counter, Topology: "wc", Component: "split", Task: 2, Container: 1, Value: 9, Delta: 9},
		{Name: "__tuples-sent", Peer: "remote", Kind: Counter, Topology: "wc", Component: "__stmgr__", Task: -1, Container: 1, Value: 5, Delta: 5},
		{Name: "my metric.x", Kind: Gauge, Topology: "wc", Component: "count", Task: 3, Container: 1, Value: 7},
	}}
}

// testBatchLines is what testBatch becomes under prefix "ardea".
func testBatchLines(epoch int64, execDelta float64) []string {
	e := " " + strconv.FormatInt(epoch, 10)
	return []string{
		"ardea.wc.count.3.__execute-count " + strconv.FormatFloat(execDelta, 'f', -1, 64) + e,
		"ardea.wc.count.3.__execute-latency 1250.5" + e,
		"ardea.wc.split.2.__emit-count.default 9" + e,
		"ardea.wc.__stmgr__.container-1.__tuples-sent.remote 5" + e,
		"ardea.wc.count.3.my_metric_x 7" + e,
	}
}

func TestNewGraphite(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cfg        graphiteConfig
		wantErr    bool
		wantPrefix string
		wantBuffer int
	}{
		{name: "address required", cfg: graphiteConfig{Prefix: "x"}, wantErr: true},
		{name: "defaults", cfg: graphiteConfig{Address: "h:2003"}, wantPrefix: "ardea", wantBuffer: 1 << 20},
		{name: "set", cfg: graphiteConfig{Address: "h:2003", Prefix: "dc1.ardea", BufferBytes: 4096}, wantPrefix: "dc1.ardea", wantBuffer: 4096},
		{name: "prefix sanitised per segment", cfg: graphiteConfig{Address: "h:2003", Prefix: "dc 1.ardea"}, wantPrefix: "dc_1.ardea", wantBuffer: 1 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := newGraphite(tc.cfg, nil)
			if tc.wantErr {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(g.prefix) != tc.wantPrefix || g.cfg.BufferBytes != tc.wantBuffer {
				t.Errorf("prefix %q buffer %d, want %q %d", g.prefix, g.cfg.BufferBytes, tc.wantPrefix, tc.wantBuffer)
			}
		})
	}
}

func TestGraphiteLines(t *testing.T) {
	cases := []struct {
		name string
		s    Sample
		want string
	}{
		{"counter sends its delta", Sample{Name: "__execute-count", Kind: Counter, Component: "count", Task: 3, Value: 1000, Delta: 300},
			"ardea.wc.count.3.__execute-count 300 1700000000"},
		{"gauge sends its value", Sample{Name: "__execute-latency", Kind: Gauge, Component: "count", Task: 3, Value: 1250.5, Delta: 99},
			"ardea.wc.count.3.__execute-latency 1250.5 1700000000"},
		{"counter without increase", Sample{Name: "__fail-count", Kind: Counter, Component: "count", Task: 3, Value: 12},
			"ardea.wc.count.3.__fail-count 0 1700000000"},
		{"stream is a segment", Sample{Name: "__emit-count", Stream: "default", Kind: Counter, Component: "split", Task: 2, Delta: 9},
			"ardea.wc.split.2.__emit-count.default 9 1700000000"},
		{"container level with peer", Sample{Name: "__tuples-sent", Peer: "remote", Kind: Counter, Component: "__stmgr__", Task: -1, Container: 1, Delta: 5},
			"ardea.wc.__stmgr__.container-1.__tuples-sent.remote 5 1700000000"},
		{"dot and space stay in their segment", Sample{Name: "my metric.x", Kind: Gauge, Component: "count", Task: 3, Value: 7},
			"ardea.wc.count.3.my_metric_x 7 1700000000"},
		{"dots in a stream", Sample{Name: "__emit-count", Stream: "a.b", Kind: Counter, Component: "split", Task: 2, Delta: 1},
			"ardea.wc.split.2.__emit-count.a_b 1 1700000000"},
		{"own topology, unicode and symbols", Sample{Name: "lat(ms)", Kind: Gauge, Topology: "word.count", Component: "zählen", Task: 0, Value: 0.125},
			"ardea.word_count.z_hlen.0.lat_ms_ 0.125 1700000000"},
		{"empty component", Sample{Name: "g", Kind: Gauge, Task: 1, Value: -2.5},
			"ardea.wc._.1.g -2.5 1700000000"},
		{"large value without exponent", Sample{Name: "g", Kind: Gauge, Component: "c", Task: 1, Value: 1e21},
			"ardea.wc.c.1.g 1000000000000000000000 1700000000"},
	}
	srv := startLineServer(t, "127.0.0.1:0")
	g := newTestGraphite(t, graphiteConfig{Address: srv.ln.Addr().String()})
	b := &Batch{Time: time.Unix(1_700_000_000, 999_000_000), Topology: "wc"}
	for _, tc := range cases {
		s := tc.s
		if s.Topology == "" {
			s.Topology = "wc"
		}
		b.Samples = append(b.Samples, s)
	}
	if err := g.Write(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "every line", func() bool { return len(srv.got()) >= len(cases) })
	got := srv.got()
	if len(got) != len(cases) {
		t.Fatalf("%d lines, want %d: %q", len(got), len(cases), got)
	}
	for i, tc := range cases {
		if got[i] != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got[i], tc.want)
		}
	}
	if g.Sent() != int64(len(cases)) || g.Dropped() != 0 {
		t.Errorf("sent %d dropped %d, want %d 0", g.Sent(), g.Dropped(), len(cases))
	}
}

// TestGraphiteReconnect: carbon goes away and comes back on the same port;
// what could not be sent meanwhile arrives after the reconnect, once.
func TestGraphiteReconnect(t *testing.T) {
	srv := startLineServer(t, "127.0.0.1:0")
	addr := srv.ln.Addr().String()
	g := newTestGraphite(t, graphiteConfig{Address: addr})
	ctx := context.Background()
	t0 := int64(1_700_000_000)
	epoch := t0
	if err := g.Write(ctx, testBatch(time.Unix(epoch, 0), 1)); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the first batch", func() bool { return len(srv.got()) == 5 })
	srv.stop()

	// The first writes after the peer closed may still land in the socket
	// (and be lost, as with any TCP sender); write until one fails.
	var want []string
	testutil.Eventually(t, "a write to fail with carbon gone", func() bool {
		epoch++
		if err := g.Write(ctx, testBatch(time.Unix(epoch, 0), float64(epoch-t0))); err != nil {
			t.Logf("write failed as expected: %v", err)
			want = append(want, testBatchLines(epoch, float64(epoch-t0))...)
			return true
		}
		return false
	})
	// Down: these only buffer (back-off or a refused dial).
	for range 2 {
		epoch++
		if err := g.Write(ctx, testBatch(time.Unix(epoch, 0), float64(epoch-t0))); err == nil {
			t.Fatal("write succeeded with carbon down")
		}
		want = append(want, testBatchLines(epoch, float64(epoch-t0))...)
	}

	srv2 := startLineServer(t, addr)
	testutil.Eventually(t, "the buffered lines after the reconnect", func() bool {
		_ = g.Write(ctx, &Batch{Time: time.Unix(epoch, 0)}) // nothing new: flushes only
		return len(srv2.got()) >= len(want)
	})
	if got := srv2.got(); !slices.Equal(got, want) {
		t.Errorf("after the reconnect got\n%q\nwant\n%q", got, want)
	}
	if sent := g.Sent(); sent != 5*(epoch-t0+1) || g.Dropped() != 0 {
		t.Errorf("sent %d dropped %d, want %d 0", sent, g.Dropped(), 5*(epoch-t0+1))
	}
	if err := g.Write(ctx, testBatch(time.Unix(epoch+1, 0), 1)); err != nil {
		t.Errorf("write after the reconnect: %v", err)
	}
}

// TestGraphiteBufferOverflow: with carbon down the buffer keeps the newest
// lines that fit and counts the rest as dropped.
func TestGraphiteBufferOverflow(t *testing.T) {
	// Every line is "p.t.c.1.m V 17000000EE\n": 23 bytes.
	const lineLen = 23
	line := func(v, epoch int) string {
		return "p.t.c.1.m " + strconv.Itoa(v) + " " + strconv.Itoa(1_700_000_000+epoch)
	}
	for _, tc := range []struct {
		name        string
		bufferBytes int
		batches     [][]int // values, one batch each; a batch's epoch is its index
		wantKept    []string
		wantDropped int64
	}{
		{"fits", 4 * lineLen, [][]int{{1}, {2, 3}}, []string{line(1, 0), line(2, 1), line(3, 1)}, 0},
		{"exactly full", 3 * lineLen, [][]int{{1}, {2, 3}}, []string{line(1, 0), line(2, 1), line(3, 1)}, 0},
		{"oldest go first", 4 * lineLen, [][]int{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}},
			[]string{line(6, 6), line(7, 7), line(8, 8), line(9, 9)}, 6},
		{"a batch larger than the buffer keeps its newest", 2*lineLen + 5, [][]int{{0, 1, 2, 3, 4}},
			[]string{line(3, 0), line(4, 0)}, 3},
		{"smaller than a line", 10, [][]int{{1}, {2}}, nil, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := closedAddr(t)
			g := newTestGraphite(t, graphiteConfig{Address: addr, Prefix: "p", BufferBytes: tc.bufferBytes})
			for i, vals := range tc.batches {
				b := &Batch{Time: time.Unix(int64(1_700_000_000+i), 0), Topology: "t"}
				for _, v := range vals {
					b.Samples = append(b.Samples, Sample{Name: "m", Kind: Gauge, Component: "c", Task: 1, Value: float64(v)})
				}
				if err := g.Write(context.Background(), b); err == nil {
					t.Fatal("write with nobody listening succeeded")
				}
			}
			if g.Dropped() != tc.wantDropped || g.pending.len() != len(tc.wantKept) || g.pending.size() > tc.bufferBytes {
				t.Fatalf("dropped %d, buffered %d lines (%d bytes); want %d dropped, %d lines in at most %d bytes",
					g.Dropped(), g.pending.len(), g.pending.size(), tc.wantDropped, len(tc.wantKept), tc.bufferBytes)
			}
			if len(tc.wantKept) == 0 {
				return
			}
			srv := startLineServer(t, addr)
			testutil.Eventually(t, "the kept lines", func() bool {
				_ = g.Write(context.Background(), &Batch{})
				return len(srv.got()) >= len(tc.wantKept)
			})
			if got := srv.got(); !slices.Equal(got, tc.wantKept) {
				t.Errorf("delivered %q, want %q", got, tc.wantKept)
			}
		})
	}
}

// fakeClock is the back-off's clock in tests.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// TestGraphiteBackoff: dial attempts are spaced 100 ms doubling to 10 s;
// Writes in between only buffer; a successful write resets the back-off.
func TestGraphiteBackoff(t *testing.T) {
	srv := startLineServer(t, "127.0.0.1:0")
	g := newTestGraphite(t, graphiteConfig{Address: "carbon.invalid:2003"})
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	g.now = clock.now
	var dials int
	up := false
	g.dial = func(ctx context.Context, network, _ string) (net.Conn, error) {
		dials++
		if !up {
			return nil, errors.New("connection refused (fake)")
		}
		var d net.Dialer
		return d.DialContext(ctx, network, srv.ln.Addr().String())
	}
	ms := time.Millisecond
	steps := []struct {
		advance   time.Duration
		wantDials int
		wantWait  time.Duration // back-off after this step
	}{
		{0, 1, 100 * ms}, // lazily: the first Write dials
		{0, 1, 100 * ms}, // in back-off: buffers only
		{99 * ms, 1, 100 * ms},
		{1 * ms, 2, 200 * ms},
		{199 * ms, 2, 200 * ms},
		{1 * ms, 3, 400 * ms},
		{400 * ms, 4, 800 * ms},
		{800 * ms, 5, 1600 * ms},
		{1600 * ms, 6, 3200 * ms},
		{3200 * ms, 7, 6400 * ms},
		{6400 * ms, 8, 10 * time.Second}, // capped
		{9999 * ms, 8, 10 * time.Second},
		{1 * ms, 9, 10 * time.Second},
	}
	if dials != 0 {
		t.Fatal("NewGraphite dialled")
	}
	for i, st := range steps {
		clock.t = clock.t.Add(st.advance)
		if err := g.Write(context.Background(), testBatch(time.Unix(int64(i), 0), 1)); err == nil {
			t.Fatalf("step %d: write succeeded", i)
		}
		if dials != st.wantDials || g.retry.backoff != st.wantWait {
			t.Fatalf("step %d: %d dials, back-off %v; want %d, %v", i, dials, g.retry.backoff, st.wantDials, st.wantWait)
		}
	}
	up = true
	clock.t = clock.t.Add(10 * time.Second)
	if err := g.Write(context.Background(), &Batch{}); err != nil {
		t.Fatal(err)
	}
	if g.retry.backoff != 0 || g.pending.len() != 0 {
		t.Errorf("after sending: back-off %v, %d lines buffered", g.retry.backoff, g.pending.len())
	}
	testutil.Eventually(t, "every buffered line", func() bool { return len(srv.got()) == 5*len(steps) })
}

// TestGraphiteContext: Write gives up when ctx ends, before dialling,
// while dialling or in the middle of a write, and keeps the lines.
func TestGraphiteContext(t *testing.T) {
	for _, tc := range []struct {
		name    string
		dial    func(ctx context.Context, cancel func()) (net.Conn, error)
		cancel  bool // before the Write
		wantErr error
	}{
		{name: "ended before", cancel: true, wantErr: context.Canceled},
		{name: "ends while dialling", wantErr: context.Canceled, dial: func(ctx context.Context, cancel func()) (net.Conn, error) {
			cancel()
			<-ctx.Done()
			return nil, ctx.Err()
		}},
		{name: "ends in a blocked write", wantErr: context.Canceled, dial: func(ctx context.Context, cancel func()) (net.Conn, error) {
			// net.Pipe is unbuffered: after one byte is read the write
			// blocks until the deadline the cancellation sets.
			client, server := net.Pipe()
			go func() {
				_, _ = server.Read(make([]byte, 1))
				cancel()
			}()
			return client, nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := startLineServer(t, "127.0.0.1:0")
			g := newTestGraphite(t, graphiteConfig{Address: srv.ln.Addr().String()})
			clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
			g.now = clock.now
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			dials := 0
			real := g.dial
			g.dial = func(c context.Context, network, addr string) (net.Conn, error) {
				dials++
				if tc.dial != nil && dials == 1 {
					return tc.dial(c, cancel)
				}
				return real(c, network, addr)
			}
			if tc.cancel {
				cancel()
			}
			err := g.Write(ctx, testBatch(time.Unix(1_700_000_000, 0), 300))
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("write: %v, want %v", err, tc.wantErr)
			}
			if g.pending.len() != 5 {
				t.Fatalf("%d lines buffered, want 5", g.pending.len())
			}
			// Carbon is reachable and ctx lives: every line arrives whole.
			clock.t = clock.t.Add(time.Minute)
			if err := g.Write(context.Background(), &Batch{}); err != nil {
				t.Fatal(err)
			}
			testutil.Eventually(t, "the buffered lines", func() bool { return len(srv.got()) >= 5 })
			if got, want := srv.got(), testBatchLines(1_700_000_000, 300); !slices.Equal(got, want) {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
}

// TestGraphiteConcurrentClose: Sent, Dropped and Close while one
// goroutine writes (run with -race); Writes after Close fail.
func TestGraphiteConcurrentClose(t *testing.T) {
	srv := startLineServer(t, "127.0.0.1:0")
	g := newTestGraphite(t, graphiteConfig{Address: srv.ln.Addr().String()})
	writerDone := make(chan error)
	go func() {
		for i := int64(0); ; i++ {
			err := g.Write(context.Background(), testBatch(time.Unix(1_700_000_000+i, 0), 1))
			if errors.Is(err, errGraphiteClosed) {
				writerDone <- err
				return
			}
		}
	}()
	var stopReaders atomic.Bool
	var readers sync.WaitGroup
	for range 2 {
		readers.Go(func() {
			for !stopReaders.Load() {
				_ = g.Sent() + g.Dropped()
			}
		})
	}
	testutil.Eventually(t, "lines to flow", func() bool { return len(srv.got()) >= 100 })
	if err := g.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	<-writerDone
	stopReaders.Store(true)
	readers.Wait()
	if err := g.Write(context.Background(), testBatch(time.Unix(1, 0), 1)); !errors.Is(err, errGraphiteClosed) {
		t.Errorf("write after close: %v", err)
	}
	if err := g.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
}

// TestGraphiteIntoCarbon sends two batches to a real carbon-cache and
// reads the values back from its whisper files.
func TestGraphiteIntoCarbon(t *testing.T) {
	c := startCarbon(t)
	g := newTestGraphite(t, graphiteConfig{Address: c.Addr})
	ctx := context.Background()
	// In the past (whisper takes no future points), within the 1 h retention.
	t1 := time.Now().Truncate(time.Second).Add(-20 * time.Second)
	t2 := t1.Add(10 * time.Second)
	first := testBatch(t1, 300)
	second := testBatch(t2, 120)
	second.Samples[0].Value = 1120   // cumulative: carbon must not see it
	second.Samples[1].Value = 980.25 // the latency gauge
	for _, b := range []*Batch{first, second} {
		if err := g.Write(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	e1, e2 := t1.Unix(), t2.Unix()
	want := map[string]map[int64]float64{
		"ardea.wc.count.3.__execute-count":                    {e1: 300, e2: 120},
		"ardea.wc.count.3.__execute-latency":                  {e1: 1250.5, e2: 980.25},
		"ardea.wc.split.2.__emit-count.default":               {e1: 9, e2: 9},
		"ardea.wc.__stmgr__.container-1.__tuples-sent.remote": {e1: 5, e2: 5},
		"ardea.wc.count.3.my_metric_x":                        {e1: 7, e2: 7},
	}
	for metric, pts := range want {
		var got map[int64]float64
		testutil.Eventually(t, metric+" in whisper", func() bool {
			got = c.fetch(t, metric, e1-60)
			return len(got) >= len(pts)
		})
		for ts, v := range pts {
			if got[ts] != v {
				t.Errorf("%s: whisper has %v, want %v at %d", metric, got, v, ts)
			}
		}
		if len(got) != len(pts) {
			t.Errorf("%s: whisper has %v, want only %v", metric, got, pts)
		}
	}
}
