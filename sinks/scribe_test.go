package sinks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/sinks/internal/scribe"
)

// scribeRecorder is a Scribe handler (the interface generated from
// scribe.thrift) that records every call and answers TRY_LATER to the
// first tryLater calls.
type scribeRecorder struct {
	mu       sync.Mutex
	calls    [][]scribe.LogEntry // every call, answered OK or not
	taken    []scribe.LogEntry   // the entries of the calls answered OK
	tryLater int
	block    chan struct{} // when set, Log waits for it to close
	entered  int           // calls that reached Log
}

func (r *scribeRecorder) Log(ctx context.Context, msgs []*scribe.LogEntry) (scribe.ResultCode, error) {
	r.mu.Lock()
	block := r.block
	r.entered++
	r.mu.Unlock()
	if block != nil {
		<-block
	}
	es := make([]scribe.LogEntry, len(msgs))
	for i, m := range msgs {
		es[i] = *m
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, es)
	if r.tryLater > 0 {
		r.tryLater--
		return scribe.ResultCode_TRY_LATER, nil
	}
	r.taken = append(r.taken, es...)
	return scribe.ResultCode_OK, nil
}

func (r *scribeRecorder) numCalls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

func (r *scribeRecorder) call(i int) []scribe.LogEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[i]
}

func (r *scribeRecorder) takenEntries() []scribe.LogEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.taken)
}

func (r *scribeRecorder) blockedCalls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.entered - len(r.calls)
}

// startScribeServer runs a real Thrift Scribe server on addr: the
// generated processor over a TSimpleServer, framed transport, binary
// protocol. t.Cleanup stops it; stop may also be called before.
func startScribeServer(t *testing.T, addr string, r *scribeRecorder) (bound string, stop func()) {
	t.Helper()
	sock, err := thrift.NewTServerSocket(addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := sock.Listen(); err != nil {
		t.Fatal(err)
	}
	st := newScribeServerTransport(sock) // so that stop closes the connections
	cfg := &thrift.TConfiguration{}
	srv := thrift.NewTSimpleServer4(scribe.NewScribeProcessor(r), st,
		thrift.NewTFramedTransportFactoryConf(thrift.NewTTransportFactory(), cfg),
		thrift.NewTBinaryProtocolFactoryConf(cfg))
	srv.SetLogger(func(msg string) { t.Logf("scribe server: %s", msg) })
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.AcceptLoop()
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			st.closeConns()
			if err := srv.Stop(); err != nil {
				t.Errorf("stop the scribe server: %v", err)
			}
			<-done
		})
	}
	t.Cleanup(stop)
	return sock.Addr().String(), stop
}

// freeScribeAddr is an address nothing listens on (yet).
func freeScribeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

func newTestScribe(t *testing.T, cfg scribeConfig) *scribeSink {
	t.Helper()
	s, err := newScribe(cfg, slog.New(slog.NewTextHandler(t.Output(), nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

// scribeBatch is n gauges of component "c", tasks first..first+n-1, value
// the task.
func scribeBatch(at time.Time, first, n int) *Batch {
	b := &Batch{Time: at, Topology: "t", Container: 1}
	for i := first; i < first+n; i++ {
		b.Samples = append(b.Samples, Sample{Name: "g", Kind: Gauge, Topology: "t", Component: "c", Task: i, Container: 1, Value: float64(i)})
	}
	return b
}

// scribeBatchMessages is what scribeBatch's entries carry.
func scribeBatchMessages(epoch int64, first, n int) []string {
	var out []string
	for i := first; i < first+n; i++ {
		out = append(out, fmt.Sprintf(`{"timestamp":%d,"topology":"t","component":"c","source":"%d","name":"g","kind":"gauge","value":%d}`, epoch, i, i))
	}
	return out
}

func scribeMsgs(es []scribe.LogEntry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Message
	}
	return out
}

func TestNewScribe(t *testing.T) {
	if _, err := newScribe(scribeConfig{Category: "x"}, nil); err == nil {
		t.Error("no error without an address")
	}
	s, err := newScribe(scribeConfig{Address: "127.0.0.1:1463"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.cfg.Category != "ardea" {
		t.Errorf("default category %q, want ardea", s.cfg.Category)
	}
	if err := s.Close(); err != nil {
		t.Error(err)
	}
	if err := s.Write(context.Background(), scribeBatch(time.Unix(1, 0), 0, 1)); !errors.Is(err, errScribeClosed) {
		t.Errorf("Write after Close: %v", err)
	}
}

func TestScribeLogsEntries(t *testing.T) {
	r := &scribeRecorder{}
	addr, _ := startScribeServer(t, "127.0.0.1:0", r)
	s := newTestScribe(t, scribeConfig{Address: addr, Category: "ardea-metrics"})
	at := time.Unix(1_700_000_000, 0)
	b := &Batch{Time: at.Add(400 * time.Millisecond), Topology: "wc", Container: 1, Samples: []Sample{
		{Name: "__execute-count", Kind: Counter, Topology: "wc", Component: "count", Task: 3, Container: 1, Value: 1000, Delta: 300},
		{Name: "__execute-latency", Kind: Gauge, Topology: "wc", Component: "count", Task: 3, Container: 1, Value: 1250.5, Delta: 99},
		{Name: "__emit-count", Stream: "default", Kind: Counter, Topology: "wc", Component: "split", Task: 2, Container: 1, Value: 9, Delta: 9},
		{Name: "__tuples-sent", Peer: "remote", Kind: Counter, Component: "__stmgr__", Task: -1, Container: 1, Value: 50, Delta: 5}, // topology from the batch
		{Name: "my metric", Kind: Gauge, Topology: "wc", Component: "count", Task: 3, Container: 1, Value: 7},
		{Name: "__idle-ms", Kind: Counter, Topology: "wc", Component: "count", Task: 3, Container: 1, Value: 12, Delta: 0},
	}}
	if err := s.Write(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	// Write returns once the server has answered: no waiting.
	if n := r.numCalls(); n != 1 {
		t.Fatalf("%d Log calls for one batch, want 1", n)
	}
	wantMsgs := []string{
		`{"timestamp":1700000000,"topology":"wc","component":"count","source":"3","name":"__execute-count","kind":"counter","value":300}`,
		`{"timestamp":1700000000,"topology":"wc","component":"count","source":"3","name":"__execute-latency","kind":"gauge","value":1250.5}`,
		`{"timestamp":1700000000,"topology":"wc","component":"split","source":"2","name":"__emit-count/default","kind":"counter","value":9}`,
		`{"timestamp":1700000000,"topology":"wc","component":"__stmgr__","source":"container-1","name":"__tuples-sent/remote","kind":"counter","value":5}`,
		`{"timestamp":1700000000,"topology":"wc","component":"count","source":"3","name":"my metric","kind":"gauge","value":7}`,
		`{"timestamp":1700000000,"topology":"wc","component":"count","source":"3","name":"__idle-ms","kind":"counter","value":0}`,
	}
	wantDecoded := []map[string]any{
		{"timestamp": 1700000000.0, "topology": "wc", "component": "count", "source": "3", "name": "__execute-count", "kind": "counter", "value": 300.0},
		{"timestamp": 1700000000.0, "topology": "wc", "component": "count", "source": "3", "name": "__execute-latency", "kind": "gauge", "value": 1250.5},
		{"timestamp": 1700000000.0, "topology": "wc", "component": "split", "source": "2", "name": "__emit-count/default", "kind": "counter", "value": 9.0},
		{"timestamp": 1700000000.0, "topology": "wc", "component": "__stmgr__", "source": "container-1", "name": "__tuples-sent/remote", "kind": "counter", "value": 5.0},
		{"timestamp": 1700000000.0, "topology": "wc", "component": "count", "source": "3", "name": "my metric", "kind": "gauge", "value": 7.0},
		{"timestamp": 1700000000.0, "topology": "wc", "component": "count", "source": "3", "name": "__idle-ms", "kind": "counter", "value": 0.0},
	}
	got := r.call(0)
	if len(got) != len(wantMsgs) {
		t.Fatalf("%d entries, want %d: %v", len(got), len(wantMsgs), scribeMsgs(got))
	}
	for i, e := range got {
		if e.Category != "ardea-metrics" {
			t.Errorf("entry %d: category %q, want ardea-metrics", i, e.Category)
		}
		if e.Message != wantMsgs[i] {
			t.Errorf("entry %d:\n got %s\nwant %s", i, e.Message, wantMsgs[i])
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(e.Message), &m); err != nil {
			t.Errorf("entry %d is not JSON: %v", i, err)
		} else if !reflect.DeepEqual(m, wantDecoded[i]) {
			t.Errorf("entry %d decodes to %v, want %v", i, m, wantDecoded[i])
		}
	}
	if s.Sent() != 6 || s.Dropped() != 0 {
		t.Errorf("sent %d, dropped %d; want 6, 0", s.Sent(), s.Dropped())
	}

	// One call per batch on the same connection; an empty batch makes none.
	if err := s.Write(context.Background(), &Batch{Time: at}); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(context.Background(), scribeBatch(at, 0, 2)); err != nil {
		t.Fatal(err)
	}
	if n := r.numCalls(); n != 2 {
		t.Fatalf("%d Log calls after an empty and a 2-sample batch, want 2", n)
	}
	if got, want := scribeMsgs(r.call(1)), scribeBatchMessages(at.Unix(), 0, 2); !reflect.DeepEqual(got, want) {
		t.Errorf("second call: %v, want %v", got, want)
	}
	if s.Sent() != 8 {
		t.Errorf("sent %d, want 8", s.Sent())
	}
}

func TestScribeNonFiniteValueIsNull(t *testing.T) {
	r := &scribeRecorder{}
	addr, _ := startScribeServer(t, "127.0.0.1:0", r)
	s := newTestScribe(t, scribeConfig{Address: addr})
	b := scribeBatch(time.Unix(1_700_000_000, 0), 0, 1)
	b.Samples[0].Value = math.NaN()
	if err := s.Write(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	want := `{"timestamp":1700000000,"topology":"t","component":"c","source":"0","name":"g","kind":"gauge","value":null}`
	if got := scribeMsgs(r.takenEntries()); len(got) != 1 || got[0] != want {
		t.Errorf("got %v, want [%s]", got, want)
	}
}

func TestScribeTryLaterKeepsEntries(t *testing.T) {
	r := &scribeRecorder{tryLater: 1}
	addr, _ := startScribeServer(t, "127.0.0.1:0", r)
	s := newTestScribe(t, scribeConfig{Address: addr}) // default category
	at := time.Unix(1_700_000_000, 0)

	err := s.Write(context.Background(), scribeBatch(at, 0, 3))
	if !errors.Is(err, errScribeTryLater) {
		t.Fatalf("Write answered TRY_LATER returned %v", err)
	}
	if len(r.takenEntries()) != 0 || s.Sent() != 0 || len(s.pending) != 3 {
		t.Fatalf("after TRY_LATER: taken %d, sent %d, pending %d; want 0, 0, 3", len(r.takenEntries()), s.Sent(), len(s.pending))
	}
	if err := s.Write(context.Background(), scribeBatch(at.Add(time.Minute), 3, 2)); err != nil {
		t.Fatal(err)
	}
	want := append(scribeBatchMessages(at.Unix(), 0, 3), scribeBatchMessages(at.Add(time.Minute).Unix(), 3, 2)...)
	if n := r.numCalls(); n != 2 {
		t.Fatalf("%d calls, want 2", n)
	}
	if got := scribeMsgs(r.call(0)); !reflect.DeepEqual(got, want[:3]) {
		t.Errorf("the call answered TRY_LATER: %v, want %v", got, want[:3])
	}
	// The retry carries the kept entries, then the new batch's, in one call.
	if got := scribeMsgs(r.call(1)); !reflect.DeepEqual(got, want) {
		t.Errorf("the retry: %v, want %v", got, want)
	}
	taken := r.takenEntries()
	if got := scribeMsgs(taken); !reflect.DeepEqual(got, want) {
		t.Errorf("taken %v, want each entry once: %v", got, want)
	}
	for i, e := range taken {
		if e.Category != "ardea" {
			t.Errorf("entry %d: category %q, want the default, ardea", i, e.Category)
		}
	}
	if s.Sent() != 5 || s.Dropped() != 0 || len(s.pending) != 0 {
		t.Errorf("sent %d, dropped %d, pending %d; want 5, 0, 0", s.Sent(), s.Dropped(), len(s.pending))
	}
	// Nothing is sent twice.
	if err := s.Write(context.Background(), scribeBatch(at.Add(2*time.Minute), 5, 1)); err != nil {
		t.Fatal(err)
	}
	if got, want := scribeMsgs(r.call(2)), scribeBatchMessages(at.Add(2*time.Minute).Unix(), 5, 1); !reflect.DeepEqual(got, want) {
		t.Errorf("third call %v, want %v", got, want)
	}
}

func TestScribeReconnects(t *testing.T) {
	addr := freeScribeAddr(t)
	s := newTestScribe(t, scribeConfig{Address: addr})
	at := time.Unix(1_700_000_000, 0)
	ctx := context.Background()

	// The server is down: the entries wait.
	if err := s.Write(ctx, scribeBatch(at, 0, 3)); err == nil {
		t.Fatal("Write with the server down succeeded")
	}
	if len(s.pending) != 3 {
		t.Fatalf("%d entries pending, want 3", len(s.pending))
	}
	r1 := &scribeRecorder{}
	_, stop1 := startScribeServer(t, addr, r1)
	// Writes of empty batches retry (once the back-off allows).
	testutil.Eventually(t, "the entries after the server came up", func() bool {
		return s.Write(ctx, &Batch{Time: at}) == nil
	})
	if got, want := scribeMsgs(r1.takenEntries()), scribeBatchMessages(at.Unix(), 0, 3); !reflect.DeepEqual(got, want) {
		t.Fatalf("first server took %v, want %v", got, want)
	}

	// The server goes away while the sink is connected, then comes back.
	stop1()
	if err := s.Write(ctx, scribeBatch(at.Add(time.Minute), 3, 2)); err == nil {
		t.Fatal("Write to a stopped server succeeded")
	}
	r2 := &scribeRecorder{}
	startScribeServer(t, addr, r2)
	testutil.Eventually(t, "the entries after the server restarted", func() bool {
		return s.Write(ctx, &Batch{Time: at}) == nil
	})
	if got, want := scribeMsgs(r2.takenEntries()), scribeBatchMessages(at.Add(time.Minute).Unix(), 3, 2); !reflect.DeepEqual(got, want) {
		t.Fatalf("second server took %v, want %v", got, want)
	}
	if n := len(r1.takenEntries()); n != 3 {
		t.Errorf("first server took %d entries in the end, want 3", n)
	}
	if s.Sent() != 5 || s.Dropped() != 0 {
		t.Errorf("sent %d, dropped %d; want 5, 0", s.Sent(), s.Dropped())
	}
}

func TestScribeOverflowDropsOldest(t *testing.T) {
	addr := freeScribeAddr(t)
	s := newTestScribe(t, scribeConfig{Address: addr})
	at := time.Unix(1_700_000_000, 0)
	ctx := context.Background()

	if err := s.Write(ctx, scribeBatch(at, 0, scribeMaxPending+7)); err == nil {
		t.Fatal("Write with the server down succeeded")
	}
	if s.Dropped() != 7 || len(s.pending) != scribeMaxPending {
		t.Fatalf("dropped %d, pending %d; want 7, %d", s.Dropped(), len(s.pending), scribeMaxPending)
	}
	// Still down (or backing off): three more push out three more.
	if err := s.Write(ctx, scribeBatch(at, scribeMaxPending+7, 3)); err == nil {
		t.Fatal("Write with the server down succeeded")
	}
	if s.Dropped() != 10 || len(s.pending) != scribeMaxPending {
		t.Fatalf("dropped %d, pending %d; want 10, %d", s.Dropped(), len(s.pending), scribeMaxPending)
	}
	r := &scribeRecorder{}
	startScribeServer(t, addr, r)
	testutil.Eventually(t, "the pending entries after the server came up", func() bool {
		return s.Write(ctx, &Batch{Time: at}) == nil
	})
	// The newest scribeMaxPending made it, in one call, in order.
	if n := r.numCalls(); n != 1 {
		t.Fatalf("%d calls, want 1", n)
	}
	if got, want := scribeMsgs(r.takenEntries()), scribeBatchMessages(at.Unix(), 10, scribeMaxPending); !reflect.DeepEqual(got, want) {
		t.Errorf("took %d entries from source %s, want %d from 10", len(got), scribeSourceOf(t, got), len(want))
	}
	if s.Sent() != scribeMaxPending || s.Dropped() != 10 {
		t.Errorf("sent %d, dropped %d; want %d, 10", s.Sent(), s.Dropped(), scribeMaxPending)
	}
}

func scribeSourceOf(t *testing.T, msgs []string) string {
	t.Helper()
	if len(msgs) == 0 {
		return "(none)"
	}
	var m struct{ Source string }
	if err := json.Unmarshal([]byte(msgs[0]), &m); err != nil {
		t.Fatal(err)
	}
	return strconv.Quote(m.Source)
}

func TestScribeWriteEndsWithContext(t *testing.T) {
	r := &scribeRecorder{block: make(chan struct{})}
	addr, _ := startScribeServer(t, "127.0.0.1:0", r)
	t.Cleanup(func() { close(r.block) }) // before the server stops
	s := newTestScribe(t, scribeConfig{Address: addr})
	at := time.Unix(1_700_000_000, 0)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- s.Write(ctx, scribeBatch(at, 0, 2)) }()
	// The server has the call (its handler is blocked) before ctx ends.
	testutil.Eventually(t, "the server to get the call", func() bool {
		return r.blockedCalls() == 1
	})
	cancel()
	var err error
	select {
	case err = <-errc:
	case <-time.After(30 * time.Second):
		t.Fatal("Write did not return when its context ended")
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Write returned %v, want context.Canceled", err)
	}
	if len(s.pending) != 2 || s.Sent() != 0 {
		t.Errorf("pending %d, sent %d; want 2, 0", len(s.pending), s.Sent())
	}
	// A cancelled context does not even dial.
	if err := s.Write(ctx, &Batch{Time: at}); !errors.Is(err, context.Canceled) {
		t.Errorf("Write with a cancelled context returned %v", err)
	}
}

func TestServeScribe(t *testing.T) {
	var (
		mu    sync.Mutex
		calls int
		got   []ScribeEntry
	)
	stop, bound, err := ServeScribe("127.0.0.1:0", func(es []ScribeEntry) bool {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls == 1 {
			return false // TRY_LATER
		}
		got = append(got, es...)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	s := newTestScribe(t, scribeConfig{Address: bound, Category: "bench"})
	at := time.Unix(1_700_000_000, 0)
	if err := s.Write(context.Background(), scribeBatch(at, 0, 2)); !errors.Is(err, errScribeTryLater) {
		t.Fatalf("first Write: %v, want TRY_LATER", err)
	}
	if err := s.Write(context.Background(), scribeBatch(at, 2, 1)); err != nil {
		t.Fatal(err)
	}
	want := []ScribeEntry{}
	for _, m := range scribeBatchMessages(at.Unix(), 0, 3) {
		want = append(want, ScribeEntry{Category: "bench", Message: m})
	}
	mu.Lock()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	mu.Unlock()

	// stop returns while the sink is still connected.
	stopped := make(chan struct{})
	go func() {
		stop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("stop hangs while a client is connected")
	}
	if err := s.Write(context.Background(), scribeBatch(at, 3, 1)); err == nil {
		t.Error("Write after the server stopped succeeded")
	}
}

// scribeServerTransport is a TServerSocket that keeps the connections it
// accepts, so that a Thrift server can be stopped while clients are
// connected: TSimpleServer.Stop waits for every connection to end and
// (with thrift.ServerStopTimeout at its default, 0) never closes them
// itself.
type scribeServerTransport struct {
	*thrift.TServerSocket
	mu      sync.Mutex
	conns   map[*scribeServerConn]struct{}
	stopped bool
}

func newScribeServerTransport(sock *thrift.TServerSocket) *scribeServerTransport {
	return &scribeServerTransport{TServerSocket: sock, conns: map[*scribeServerConn]struct{}{}}
}

func (t *scribeServerTransport) Accept() (thrift.TTransport, error) {
	c, err := t.TServerSocket.Accept()
	if err != nil {
		return nil, err
	}
	sc := &scribeServerConn{TTransport: c, t: t}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		_ = c.Close() // the server fails on it at once
	} else {
		t.conns[sc] = struct{}{}
	}
	return sc, nil
}

// closeConns closes the connections open and those accepted from now on.
func (t *scribeServerTransport) closeConns() {
	t.mu.Lock()
	t.stopped = true
	conns := t.conns
	t.conns = map[*scribeServerConn]struct{}{}
	t.mu.Unlock()
	for c := range conns {
		_ = c.TTransport.Close()
	}
}

type scribeServerConn struct {
	thrift.TTransport
	t *scribeServerTransport
}

func (c *scribeServerConn) Close() error {
	c.t.mu.Lock()
	delete(c.t.conns, c)
	c.t.mu.Unlock()
	return c.TTransport.Close()
}
