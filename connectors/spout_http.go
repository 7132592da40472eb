package connectors

import (
	"bufio"
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// The http spout ingests lines or JSON POSTed to an HTTP endpoint: every
// line of a text body becomes a tuple (line); a JSON body (Content-Type
// application/json) is one value or an array of values, each becoming a
// tuple holding its compact JSON text; a body that is not valid JSON is
// refused whole (400) so nothing of it is half taken. With token set, a
// request must carry "Authorization: Bearer <token>" (else 401). Each task
// listens on its own port (port + task index).
//
// At most once the request is answered 202 Accepted as soon as its lines
// are emitted. At least once it is answered only when every line's tuple
// tree has completed (200 OK), or 503 Service Unavailable with Retry-After
// if one failed or timed out, so the client retries and nothing is lost
// silently. A full queue answers 429 Too Many Requests (back pressure, no
// loss). A body holding a line or element whose tuple would exceed the
// tuple limit (max.tuple.bytes, topology.max.tuple.bytes) is refused whole
// (413, naming the line and the limit): the client is the source to tell,
// so it neither reaches dead letters nor fails the topology. The spout
// never finishes.

func init() {
	register(plugin.RegisterSpout(plugin.Spec{
		Name: "http",
		Summary: "Ingests POSTed bodies, one tuple (`line`) per line, or per element of a JSON array body (`Content-Type: application/json`, compact JSON; a malformed one is refused whole, 400). " +
			"At most once a request gets 202 once its lines are emitted; at least once 200 only when every line's tree completed, 503 + Retry-After if one failed or timed out; 429 when the queue is full.",
		Fields: []plugin.Field{
			{Name: "listen", Type: plugin.TypeString, Reach: plugin.ReachListen, Default: "127.0.0.1:8088", Doc: "host:port of task 0; task i listens on port + i (port 0: any free port)"},
			{Name: "path", Type: plugin.TypeString, Default: "/ingest", Doc: "URL path that accepts POST"},
			{Name: "max_body_bytes", Type: plugin.TypeInt, Default: "4194304", Min: "1", Doc: "largest request body"},
			{Name: "queue", Type: plugin.TypeInt, Default: "64", Min: "1", Doc: "requests waiting for the spout before 429"},
			{Name: "timeout", Type: plugin.TypeDuration, Default: "60s", Min: "1ms", Doc: "longest a request waits for its lines to be processed (then 503)"},
			{Name: "token", Type: plugin.TypeString, Default: "", Doc: "bearer token every request must carry (Authorization: Bearer <token>); empty: none"},
		},
		Outputs: map[string][]string{"default": {"line"}},
	}, newHTTPSpout))
}

// httpRequest is one POST waiting for its lines to be processed.
type httpRequest struct {
	lines   [][]byte
	pending int  // lines whose trees have no outcome yet (at least once)
	failed  bool // one of them failed or timed out
	done    chan int
}

type httpSpout struct {
	listen, path  string
	maxBody       int64
	queueLen      int
	timeout       time.Duration
	token         []byte
	comp          string
	stream        uint16
	acking        bool
	queue         chan *httpRequest
	srv           *http.Server
	ln            net.Listener
	cur           *httpRequest // being emitted
	curLine       int
	next          uint64
	byID          map[uint64]*httpRequest
	vals          []byte
	mu            sync.Mutex // guards addr
	addr          string
	closeOnce     sync.Once
	closeErr      error
	acceptedLines int64
	maxTuple      int64 // the tuple limit, and the setting it comes from
	tupleSetting  string
}

func newHTTPSpout(cfg plugin.Config) (plugin.Spout, error) {
	r := cfg.Reader()
	s := &httpSpout{listen: r.String("listen"), path: r.String("path"), maxBody: r.Int("max_body_bytes"),
		queueLen: int(r.Int("queue")), timeout: r.Duration("timeout"), token: []byte(r.String("token"))}
	s.maxTuple, s.tupleSetting = r.TupleLimit()
	if err := r.Err(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *httpSpout) errorf(format string, args ...any) error {
	return fmt.Errorf("component %q: http spout: %w", s.comp, fmt.Errorf(format, args...))
}

// Addr is the address the task listens on (tests; a port 0 listen).
func (s *httpSpout) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

func (s *httpSpout) Open(ctx context.Context, tc plugin.TaskContext, _ plugin.Collector) error {
	s.comp = tc.Component
	st, err := outputStream(tc, "http spout", "default", 1)
	if err != nil {
		return err
	}
	s.stream = st
	host, port, err := net.SplitHostPort(s.listen)
	if err != nil {
		return s.errorf("listen %q: %w", s.listen, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return s.errorf("listen %q: port: %w", s.listen, err)
	}
	if p != 0 {
		p += int(tc.TaskIndex)
	}
	s.ln, err = net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p)))
	if err != nil {
		return s.errorf("%w", err)
	}
	s.mu.Lock()
	s.addr = s.ln.Addr().String()
	s.mu.Unlock()
	s.acking = tc.Acking
	s.queue = make(chan *httpRequest, s.queueLen)
	s.byID = map[uint64]*httpRequest{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+s.path, s.handle)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go s.srv.Serve(s.ln)
	if tc.Logger != nil {
		tc.Logger.Info("http spout listening", "addr", s.addr, "path", s.path)
	}
	return nil
}

// handle runs on the HTTP server's goroutines: it queues the request and
// waits for the spout's verdict.
func (s *httpSpout) handle(w http.ResponseWriter, r *http.Request) {
	if len(s.token) > 0 {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), s.token) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ardea"`)
			http.Error(w, "missing or wrong bearer token", http.StatusUnauthorized)
			return
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
	if err != nil {
		http.Error(w, fmt.Sprintf("request body: %v (max_body_bytes %d)", err, s.maxBody), http.StatusRequestEntityTooLarge)
		return
	}
	req := &httpRequest{done: make(chan int, 1)}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "application/json" {
		if req.lines, err = jsonValues(body); err != nil {
			http.Error(w, fmt.Sprintf("JSON body: %v (nothing of it was taken)", err), http.StatusBadRequest)
			return
		}
	} else {
		sc := bufio.NewScanner(bytes.NewReader(body))
		sc.Buffer(make([]byte, 64<<10), int(s.maxBody))
		for sc.Scan() {
			if line := bytes.TrimSuffix(sc.Bytes(), []byte{'\r'}); len(line) > 0 {
				req.lines = append(req.lines, bytes.Clone(line))
			}
		}
	}
	if len(req.lines) == 0 {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	for i, l := range req.lines {
		if size := int64(len(appendStringValues(nil, nil)) + len(l)); size > s.maxTuple {
			http.Error(w, fmt.Sprintf("line %d: a tuple of %d bytes exceeds %s %d (nothing of the request was taken)", i+1, size, s.tupleSetting, s.maxTuple),
				http.StatusRequestEntityTooLarge)
			return
		}
	}
	select {
	case s.queue <- req:
	default:
		w.Header().Set("Retry-After", "1")
		http.Error(w, "queue full: retry later", http.StatusTooManyRequests)
		return
	}
	select {
	case code := <-req.done:
		if code == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "1")
		}
		w.WriteHeader(code)
		fmt.Fprintf(w, "%d lines\n", len(req.lines))
	case <-time.After(s.timeout):
		w.Header().Set("Retry-After", "1")
		http.Error(w, "not processed in time: retry", http.StatusServiceUnavailable)
	case <-r.Context().Done():
	}
}

func (s *httpSpout) Next(ctx context.Context, max int, out plugin.Collector) (plugin.Status, error) {
	n := 0
	for n < max {
		if s.cur == nil {
			select {
			case s.cur = <-s.queue:
				s.curLine = 0
				if s.acking {
					s.cur.pending = len(s.cur.lines)
				}
			default:
				if n == 0 {
					return plugin.Idle, nil
				}
				return plugin.Emitted, nil
			}
		}
		line := s.cur.lines[s.curLine]
		var id uint64
		if s.acking {
			s.next++
			id = s.next
			s.byID[id] = s.cur
		}
		s.vals = appendStringValues(s.vals[:0], line)
		if err := out.Emit(s.stream, tuple.NoTask, id, nil, s.vals); err != nil {
			return plugin.Emitted, err
		}
		n++
		s.acceptedLines++
		if s.curLine++; s.curLine == len(s.cur.lines) {
			if !s.acking {
				s.cur.done <- http.StatusAccepted
			}
			s.cur = nil
		}
	}
	return plugin.Emitted, nil
}

// Ack and Fail settle the lines' requests (at least once).
func (s *httpSpout) Ack(ctx context.Context, ids []uint64, _ plugin.Collector) error {
	s.settle(ids, false)
	return nil
}

func (s *httpSpout) Fail(ctx context.Context, ids []uint64, _ plugin.Collector) error {
	s.settle(ids, true)
	return nil
}

func (s *httpSpout) settle(ids []uint64, failed bool) {
	for _, id := range ids {
		req := s.byID[id]
		if req == nil {
			continue
		}
		delete(s.byID, id)
		req.failed = req.failed || failed
		if req.pending--; req.pending == 0 {
			code := http.StatusOK
			if req.failed {
				code = http.StatusServiceUnavailable
			}
			req.done <- code
		}
	}
}

func (s *httpSpout) Activate(ctx context.Context) error   { return nil }
func (s *httpSpout) Deactivate(ctx context.Context) error { return nil }

// Close stops listening; requests still waiting get 503 (retry).
func (s *httpSpout) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		if s.srv == nil {
			return
		}
		if err := s.srv.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.closeErr = s.errorf("%w", err)
		}
	})
	return s.closeErr
}

// jsonValues splits a JSON body into the compact text of each value: the
// elements of a top-level array, or the one value.
func jsonValues(body []byte) ([][]byte, error) {
	var raw json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, err
	}
	var items []json.RawMessage
	if t := bytes.TrimLeft(raw, " \t\r\n"); len(t) > 0 && t[0] == '[' {
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, err
		}
	} else {
		items = []json.RawMessage{raw}
	}
	out := make([][]byte, 0, len(items))
	for _, it := range items {
		var b bytes.Buffer
		if err := json.Compact(&b, it); err != nil {
			return nil, err
		}
		out = append(out, b.Bytes())
	}
	return out, nil
}
