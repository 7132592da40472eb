package connectors

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/internal/testutil"
)

func init() {
	fixtures["spout:http"] = func(t *testing.T, _ string) []fixture {
		return []fixture{{name: "minimal", cfg: map[string]string{"listen": "127.0.0.1:0"}, opened: func(t *testing.T, s plugin.Spout) {
			go http.Post("http://"+s.(*httpSpout).Addr()+"/ingest", "text/plain", strings.NewReader("a\nb\nc\n"))
			testutil.Eventually(t, "the request queued", func() bool { return len(s.(*httpSpout).queue) > 0 })
		}}}
	}
}

// post sends body and returns the status code (on its own goroutine).
func post(url, body string) chan int {
	ch := make(chan int, 1)
	go func() {
		resp, err := http.Post(url, "text/plain", strings.NewReader(body))
		if err != nil {
			ch <- 0
			return
		}
		resp.Body.Close()
		ch <- resp.StatusCode
	}()
	return ch
}

// TestHTTPSpoutAtLeastOnce: a request is answered 200 only once every one
// of its lines' trees completed, 503 (retry) if one failed; at most once it
// is answered 202 once its lines are emitted.
func TestHTTPSpoutAtLeastOnce(t *testing.T) {
	for _, acking := range []bool{true, false} {
		cfg := map[string]string{"listen": "127.0.0.1:0"}
		s, err := newSpout("http", cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx := taskContext("c", 0, 1, cfg, map[string][]string{"default": {"line"}}, nil)
		ctx.Acking = acking
		out := &recorder{}
		if err := s.Open(context.Background(), ctx, out); err != nil {
			t.Fatal(err)
		}
		url := "http://" + s.(*httpSpout).Addr() + "/ingest"
		first := post(url, "one\ntwo\r\n\nthree\n")
		emitAll := func(n int) {
			testutil.Eventually(t, fmt.Sprintf("%d emits", n), func() (bool, string) {
				if _, err := s.Next(context.Background(), 10, out); err != nil {
					t.Fatal(err)
				}
				return len(out.emits) >= n, fmt.Sprintf("%d emits", len(out.emits))
			})
			if len(out.emits) != n {
				t.Fatalf("%d emits, want %d", len(out.emits), n)
			}
		}
		emitAll(3)
		if got := out.lines(t); !slices.Equal(got, []string{"one", "two", "three"}) {
			t.Fatalf("lines %q", got)
		}
		if !acking {
			if code := <-first; code != http.StatusAccepted {
				t.Fatalf("at most once: status %d, want 202", code)
			}
			s.Close(context.Background())
			continue
		}
		ids := []uint64{out.emits[0].msgID, out.emits[1].msgID, out.emits[2].msgID}
		s.Ack(context.Background(), ids[:2], out)
		select {
		case code := <-first:
			t.Fatalf("answered %d before every line was processed", code)
		case <-time.After(50 * time.Millisecond):
		}
		s.Ack(context.Background(), ids[2:], out)
		if code := <-first; code != http.StatusOK {
			t.Fatalf("status %d, want 200", code)
		}
		second := post(url, "x\ny\n")
		emitAll(5)
		s.Ack(context.Background(), []uint64{out.emits[3].msgID}, out)
		s.Fail(context.Background(), []uint64{out.emits[4].msgID}, out)
		if code := <-second; code != http.StatusServiceUnavailable {
			t.Fatalf("a failed line: status %d, want 503", code)
		}
		s.Close(context.Background())
	}
}

// do sends one request and returns the status, the Retry-After and
// WWW-Authenticate headers (synchronously).
func do(t *testing.T, url, ctype, token, body string) (int, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", ctype)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header
}

// TestHTTPSpoutTokenJSONAndBackPressure: without the bearer token a
// request is refused (401); a JSON array becomes one tuple per element (its
// compact JSON), a malformed JSON body is refused whole (400) with nothing
// emitted; a full queue answers 429 with Retry-After.
func TestHTTPSpoutTokenJSONAndBackPressure(t *testing.T) {
	cfg := map[string]string{"listen": "127.0.0.1:0", "token": "s3cret", "queue": "1"}
	s, err := newSpout("http", cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := &recorder{}
	if err := s.Open(context.Background(), taskContext("c", 0, 1, cfg, map[string][]string{"default": {"line"}}, nil), out); err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	url := "http://" + s.(*httpSpout).Addr() + "/ingest"
	for _, tok := range []string{"", "wrong"} {
		if code, h := do(t, url, "text/plain", tok, "a\n"); code != http.StatusUnauthorized || !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer") {
			t.Fatalf("token %q: status %d, WWW-Authenticate %q", tok, code, h.Get("WWW-Authenticate"))
		}
	}
	if code, _ := do(t, url, "application/json", "s3cret", `[{"a":1}, {"b": [2, 3]`); code != http.StatusBadRequest {
		t.Fatalf("malformed JSON: status %d, want 400", code)
	}
	// On its own goroutine: at most once the answer comes once emitted.
	jsonDone := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`[{"a": 1}, "x", 7]`))
		req.Header.Set("Content-Type", "application/json; charset=utf-8")
		req.Header.Set("Authorization", "Bearer s3cret")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			jsonDone <- 0
			return
		}
		resp.Body.Close()
		jsonDone <- resp.StatusCode
	}()
	testutil.Eventually(t, "the JSON request queued", func() bool { return len(s.(*httpSpout).queue) == 1 })
	// The queue (1) holds that request until Next takes it: the next one
	// finds no room.
	if code, h := do(t, url, "text/plain", "s3cret", "b\n"); code != http.StatusTooManyRequests || h.Get("Retry-After") == "" {
		t.Fatalf("full queue: status %d, Retry-After %q", code, h.Get("Retry-After"))
	}
	testutil.Eventually(t, "three tuples", func() bool {
		if _, err := s.Next(context.Background(), 10, out); err != nil {
			t.Fatal(err)
		}
		return len(out.emits) >= 3
	})
	if got := out.lines(t); !slices.Equal(got, []string{`{"a":1}`, `"x"`, `7`}) {
		t.Fatalf("tuples %q", got)
	}
	if code := <-jsonDone; code != http.StatusAccepted {
		t.Fatalf("JSON array: status %d, want 202 once emitted", code)
	}
}
