package connectors

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/connectors/plugin/conformance"
	"github.com/ardea-dev/ardea/internal/testbroker"
	"github.com/ardea-dev/ardea/internal/testutil"
)

// TestMaxLineBytesWithinTupleLimit: max_line_bytes may not exceed the
// tuple limit that applies to the component (its max.tuple.bytes, else
// topology.max.tuple.bytes of the component or the topology, else 1 MiB);
// the refusal names both settings and their values. Through the
// topology validator, as ardea run, submit and the hosts call it.
func TestMaxLineBytesWithinTupleLimit(t *testing.T) {
	for _, tc := range []struct {
		name     string
		topology string // topology-level config lines
		config   string // the spout's config
		want     string // "" = valid
	}{
		{"default", "", `{path: in.txt}`, ""},
		{"at the default limit", "", `{path: in.txt, max_line_bytes: "1048576"}`, ""},
		{"above the default limit", "", `{path: in.txt, max_line_bytes: "2097152"}`,
			`component "lines" (builtin:file): max_line_bytes 2097152 exceeds topology.max.tuple.bytes 1048576`},
		{"above the topology's limit", `topology.max.tuple.bytes: "65536"`, `{path: in.txt, max_line_bytes: "65537"}`,
			`component "lines" (builtin:file): max_line_bytes 65537 exceeds topology.max.tuple.bytes 65536`},
		{"within a raised limit", `topology.max.tuple.bytes: "4194304"`, `{path: in.txt, max_line_bytes: "2097152"}`, ""},
		{"default under a lowered limit", `topology.max.tuple.bytes: "65536"`, `{path: in.txt}`, ""},
		{"above the component's max.tuple.bytes", `topology.max.tuple.bytes: "4194304"`, `{path: in.txt, max.tuple.bytes: "1000", max_line_bytes: "1001"}`,
			`component "lines" (builtin:file): max_line_bytes 1001 exceeds max.tuple.bytes 1000`},
		{"above the component's topology override", "", `{path: in.txt, topology.max.tuple.bytes: "1000", max_line_bytes: "2000"}`,
			`component "lines" (builtin:file): max_line_bytes 2000 exceeds topology.max.tuple.bytes 1000`},
		{"bad component limit", "", `{path: in.txt, max.tuple.bytes: "lots"}`,
			`component "lines" (builtin:file): config "max.tuple.bytes": want an integer number of bytes from 16`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			y := "name: big\n"
			if tc.topology != "" {
				y += "config:\n  " + tc.topology + "\n"
			}
			y += "spouts:\n  - name: lines\n    module: builtin:file\n    config: " + tc.config + "\n" +
				"bolts:\n  - name: out\n    module: builtin:file\n    config: {path: out.txt}\n    inputs: [lines]\n"
			top, err := ardea.Parse([]byte(y), "", "big.yaml")
			if err != nil {
				t.Fatal(err)
			}
			err = top.Validate(ardea.ValidateOptions{SkipModuleCheck: true, Builtins: Outputs, BuiltinConfig: ValidateConfig})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			ps := ardea.Problems(err)
			if len(ps) != 1 || !strings.Contains(ps[0].Error(), tc.want) {
				t.Fatalf("Validate = %v\nwant one problem containing %s", err, tc.want)
			}
		})
	}
}

// TestFileSpoutMaxLineFollowsTupleLimit: without max_line_bytes a line
// may be as long as the tuple limit.
func TestFileSpoutMaxLineFollowsTupleLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.txt")
	writeFile(t, path, strings.Repeat("a", 64)+"\n"+strings.Repeat("b", 65)+"\n")
	cfg := WithTopologySettings(map[string]string{"path": path}, map[string]string{"topology.max.tuple.bytes": "64", "topology.other": "x"})
	if cfg["topology.other"] != "x" || cfg["path"] != path {
		t.Fatalf("WithTopologySettings = %v", cfg)
	}
	s, out := openFileSpout(t, cfg, 0, 1)
	st, err := s.Next(context.Background(), 10, out)
	for err == nil && st != plugin.Done {
		st, err = s.Next(context.Background(), 10, out)
	}
	if want := fmt.Sprintf("%s:2: line longer than max_line_bytes 64", path); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Next = %v, %v; want an error containing %q", st, err, want)
	}
	if got := out.lines(t); len(got) != 1 || len(got[0]) != 64 {
		t.Errorf("lines = %d", len(got))
	}
}

// longLine is a line of at least n bytes mixing multi-byte runes, so that
// chunks of the read buffer cut some of them, and characters JSON escapes.
func longLine(n int, seed string) string {
	var b strings.Builder
	b.WriteString(seed)
	for b.Len() < n {
		b.WriteString("é€𝄞x\"\\\t")
	}
	return b.String()
}

// TestFileSpoutOversizedToDeadLetters: lines longer than max_line_bytes
// (shorter and longer than the read buffer) go whole to the dead-letter file with their line numbers and the
// reason; the other lines, after them too, are emitted; ardea dlq lists
// them.
func TestFileSpoutOversizedToDeadLetters(t *testing.T) {
	dir := t.TempDir()
	path, dead := filepath.Join(dir, "in.txt"), filepath.Join(dir, "dead.jsonl")
	big := longLine(3*fileSpoutBuffer+17, "big")
	mid := longLine(500, "mid")
	cut := strings.Repeat("c", fileSpoutBuffer-1)
	lines := []string{"one", big, "two", mid, "three", cut, "four"}
	writeFile(t, path, strings.Join(lines, "\r\n")+"\r\n")
	for _, acking := range []bool{false, true} {
		t.Run(fmt.Sprint("acking=", acking), func(t *testing.T) {
			os.Remove(dead)
			cfg := map[string]string{"path": path, "max_line_bytes": "400", "dead_letter": dead}
			s, err := newSpout("file", cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx := taskContext("lines", 0, 1, cfg, map[string][]string{"default": {"line"}}, nil)
			ctx.Acking = acking
			out := &recorder{}
			if err := s.Open(context.Background(), ctx, out); err != nil {
				t.Fatal(err)
			}
			defer s.Close(context.Background())
			for i := 0; ; i++ {
				st, err := s.Next(context.Background(), 2, out)
				if err != nil {
					t.Fatalf("Next: %v", err)
				}
				if st == plugin.Done {
					break
				}
				if acking {
					var ids []uint64
					for _, e := range out.emits {
						ids = append(ids, e.msgID)
					}
					s.Ack(context.Background(), ids, out)
				}
				if i > 100 {
					t.Fatal("no Done")
				}
			}
			if got := out.lines(t); !slices.Equal(got, []string{"one", "two", "three", "four"}) {
				t.Fatalf("emitted %q", got)
			}
			checkMode(t, dead, 0o600) // a tenant's data
			dl, err := deadLetters(context.Background(), "test", "lines", "builtin:file", cfg)
			if err != nil {
				t.Fatal(err)
			}
			want := []struct {
				line  int
				value string
			}{{2, big}, {4, mid}, {6, cut}}
			if len(dl) != len(want) {
				t.Fatalf("%d dead letters, want %d", len(dl), len(want))
			}
			for i, w := range want {
				d := dl[i]
				if d.Source != fmt.Sprintf("%s:%d", path, w.line) || d.Value != w.value || d.Failures != 0 ||
					d.Error != fmt.Sprintf("line of %d bytes exceeds max_line_bytes 400", len(w.value)) {
					t.Errorf("dead letter %d: source %s, %d bytes (want %d), error %q", i, d.Source, len(d.Value), len(w.value), d.Error)
				}
			}
		})
	}
}

// TestFileSpoutOversizedFailsAfterPending: without dead letters, at least
// once, the spout stops before the oversized line, keeps replaying what
// failed, and reports the error with Done only once every line before it
// was acked; its saved position is the line, so a restart fails there
// again instead of skipping it.
func TestFileSpoutOversizedFailsAfterPending(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.txt")
	writeFile(t, path, "a\nb\n"+strings.Repeat("x", 2*fileSpoutBuffer)+"\nc\n")
	cfg := map[string]string{"path": path, "max_line_bytes": "1000"}
	ctx := taskContext("lines", 0, 1, cfg, map[string][]string{"default": {"line"}}, nil)
	ctx.Acking = true
	s, err := newSpout("file", cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := &recorder{}
	if err := s.Open(context.Background(), ctx, out); err != nil {
		t.Fatal(err)
	}
	if st, err := s.Next(context.Background(), 10, out); st != plugin.Emitted || err != nil || len(out.emits) != 2 {
		t.Fatalf("Next = %v, %v after %d emits", st, err, len(out.emits))
	}
	// Pending trees: no error yet.
	if st, err := s.Next(context.Background(), 10, out); st != plugin.Idle || err != nil {
		t.Fatalf("Next with trees pending = %v, %v; want Idle", st, err)
	}
	s.Fail(context.Background(), []uint64{2}, out) // "b" failed: replayed before the error
	s.Ack(context.Background(), []uint64{1}, out)
	if st, err := s.Next(context.Background(), 10, out); st != plugin.Emitted || err != nil || len(out.emits) != 3 {
		t.Fatalf("replay: Next = %v, %v, %d emits", st, err, len(out.emits))
	}
	s.Ack(context.Background(), []uint64{2}, out)
	st, err := s.Next(context.Background(), 10, out)
	var tooLarge *recordTooLargeError
	if st != plugin.Done || !errors.As(err, &tooLarge) || tooLarge.Source != path+":3" {
		t.Fatalf("Next = %v, %v; want Done and the line", st, err)
	}
	s.Close(context.Background())
	// A restart with the task's state begins at the line and fails there.
	s, _ = newSpout("file", cfg)
	out = &recorder{}
	if err := s.Open(context.Background(), ctx, out); err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	if st, err := s.Next(context.Background(), 10, out); st != plugin.Done || !errors.As(err, &tooLarge) || len(out.emits) != 0 {
		t.Fatalf("restart: Next = %v, %v, %d emits", st, err, len(out.emits))
	}
}

// TestFileSpoutDeadLetterWriteFails: a dead-letter file that cannot be
// written ends the input before the line, naming why (never a lost line).
func TestFileSpoutDeadLetterWriteFails(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "in.txt")
	writeFile(t, path, "a\n"+strings.Repeat("x", 100)+"\nb\n")
	cfg := map[string]string{"path": path, "max_line_bytes": "10", "dead_letter": filepath.Join(dir, "no", "such", "dir")}
	s, out := openFileSpout(t, cfg, 0, 1)
	st, err := s.Next(context.Background(), 10, out)
	for err == nil && st != plugin.Done {
		st, err = s.Next(context.Background(), 10, out)
	}
	if err == nil || !strings.Contains(err.Error(), path+":2: line longer than max_line_bytes 10 (and its dead letter was not written: ") {
		t.Fatalf("Next = %v, %v", st, err)
	}
	if got := out.lines(t); !slices.Equal(got, []string{"a"}) {
		t.Errorf("lines = %q", got)
	}
}

func TestJSONCharsAcrossChunks(t *testing.T) {
	s := []byte("a€𝄞\"\xff\n" + "é")
	for cut := range len(s) + 1 {
		b, carry := jsonChars(nil, s[:cut], false)
		b, rest := jsonChars(b, append(carry, s[cut:]...), true)
		if want := appendJSONString(nil, s); string(b) != string(want[1:len(want)-1]) || len(rest) != 0 {
			t.Fatalf("cut %d: %q, want %q", cut, b, want)
		}
	}
}

// TestKafkaSpoutOversized: a record whose tuple exceeds the tuple limit
// goes to the dead-letter topic with its source and the reason, and the
// records after it flow; without a dead-letter topic the spout stops
// before it, waits for the trees in flight, then reports it with Done
// (fail after drain), and the group's committed offset is the record's,
// so a restart reads it again instead of skipping it.
func TestKafkaSpoutOversized(t *testing.T) {
	b := fakeKafka(t)
	topic, dlq := b.topic(t, 1), b.topic(t, 1)
	big := strings.Repeat("B", 2000)
	for i, v := range []string{"v0", "v1", big, "v3", "v4"} {
		b.produceValue(t, topic, i, v)
	}
	limits := map[string]string{"topology.max.tuple.bytes": "1024"}

	t.Run("dead letters", func(t *testing.T) {
		cfg := WithTopologySettings(map[string]string{"brokers": b.brokers, "topics": topic, "group": "dl", "dead_letter_topic": dlq}, limits)
		s := openKafkaSpout(t, cfg, ackingContext("k", 0, 1, cfg, conformance.NewMemState()))
		out := &recorder{}
		pull(t, s, out, 4)
		if got := values(t, out); !slices.Equal(got, []string{"v0", "v1", "v3", "v4"}) {
			t.Fatalf("emitted %q", got)
		}
		var ids []uint64
		for _, e := range out.emits {
			ids = append(ids, e.msgID)
		}
		if err := s.Ack(context.Background(), ids, out); err != nil {
			t.Fatal(err)
		}
		if pos := s.positions()[topicPart{topic, 0}]; pos != 5 {
			t.Errorf("position %d, want 5", pos)
		}
		dl, err := deadLetters(context.Background(), "test", "k", "builtin:kafka", cfg)
		if err != nil || len(dl) != 1 {
			t.Fatalf("DeadLetters = %+v, %v", dl, err)
		}
		want := fmt.Sprintf("record of %d bytes exceeds topology.max.tuple.bytes 1024", len(s.vals))
		if d := dl[0]; d.Value != big || d.Source != topic+"/0/2" || d.Failures != 0 || !strings.HasPrefix(d.Error, "record of ") || !strings.HasSuffix(d.Error, " bytes exceeds topology.max.tuple.bytes 1024") {
			t.Errorf("dead letter: source %s, %d bytes, failures %d, error %q (want like %q)", d.Source, len(d.Value), d.Failures, d.Error, want)
		}
	})

	t.Run("no dead letters", func(t *testing.T) {
		cfg := WithTopologySettings(map[string]string{"brokers": b.brokers, "topics": topic, "group": "stop"}, limits)
		s := openKafkaSpout(t, cfg, ackingContext("k", 0, 1, cfg, conformance.NewMemState()))
		out := &recorder{}
		pull(t, s, out, 2)
		var st plugin.Status
		var err error
		testutil.Eventually(t, "the oversized record", func() bool {
			st, err = s.Next(context.Background(), 64, out)
			return s.failed != nil || err != nil
		})
		if st == plugin.Done || err != nil {
			t.Fatalf("Next with trees in flight = %v, %v; want them waited for", st, err)
		}
		if err := s.Ack(context.Background(), []uint64{out.emits[0].msgID, out.emits[1].msgID}, out); err != nil {
			t.Fatal(err)
		}
		st, err = s.Next(context.Background(), 64, out)
		var tooLarge *recordTooLargeError
		if st != plugin.Done || !errors.As(err, &tooLarge) || tooLarge.Source != topic+"/0/2" ||
			!strings.Contains(err.Error(), "exceeds topology.max.tuple.bytes 1024 (and no dead letters to put it in") {
			t.Fatalf("Next = %v, %v", st, err)
		}
		if got := values(t, out); !slices.Equal(got, []string{"v0", "v1"}) {
			t.Errorf("emitted %q", got)
		}
		s.Close(context.Background())
		if c := b.committed(t, "stop", topic); c != 2 {
			t.Errorf("committed offset %d, want 2 (the oversized record)", c)
		}
	})
}

// TestJetStreamSpoutOversized: a message over the tuple limit goes to the
// dead-letter subject (and is terminated) while the others flow; without
// one the spout leaves it in the stream and ends its input with the error.
func TestJetStreamSpoutOversized(t *testing.T) {
	url, js := jetStreamServer(t, 0)
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "DLQ", Subjects: []string{"dlq.>"}}); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("B", 300)
	for _, v := range []string{"m0", big, "m2"} {
		if _, err := js.Publish(ctx, "s.0", []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	limits := map[string]string{"topology.max.tuple.bytes": "200"}
	open := func(t *testing.T, cfg map[string]string) (plugin.Spout, *recorder) {
		s, err := newSpout("jetstream", cfg)
		if err != nil {
			t.Fatal(err)
		}
		sctx := taskContext("c", 0, 1, cfg, map[string][]string{"default": {"subject", "data"}}, nil)
		out := &recorder{}
		if err := s.Open(context.Background(), sctx, out); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close(context.Background()) })
		return s, out
	}
	t.Run("dead letters", func(t *testing.T) {
		cfg := WithTopologySettings(map[string]string{"url": url, "stream": "S", "durable": "dl", "dead_letter_subject": "dlq.s"}, limits)
		s, out := open(t, cfg)
		testutil.Eventually(t, "two messages", func() bool {
			if _, err := s.Next(context.Background(), 10, out); err != nil {
				t.Fatal(err)
			}
			return len(out.emits) >= 2
		})
		dl, err := deadLetters(ctx, "test", "c", "builtin:jetstream", cfg)
		if err != nil || len(dl) != 1 {
			t.Fatalf("DeadLetters = %+v, %v", dl, err)
		}
		if d := dl[0]; d.Value != big || d.Source != "s.0 S/2" || d.Failures != 0 || !strings.HasSuffix(d.Error, " bytes exceeds topology.max.tuple.bytes 200") {
			t.Fatalf("dead letter %+v", d)
		}
	})
	t.Run("no dead letters", func(t *testing.T) {
		cfg := WithTopologySettings(map[string]string{"url": url, "stream": "S", "durable": "stop"}, limits)
		s, out := open(t, cfg)
		var st plugin.Status
		var err error
		testutil.Eventually(t, "the oversized message", func() bool {
			st, err = s.Next(context.Background(), 10, out)
			return err != nil
		})
		var tooLarge *recordTooLargeError
		if st != plugin.Done || !errors.As(err, &tooLarge) || tooLarge.Source != "S/2" || len(out.emits) != 1 {
			t.Fatalf("Next = %v, %v after %d emits", st, err, len(out.emits))
		}
	})
}

// TestHTTPSpoutOversized: a body with a line whose tuple exceeds the
// tuple limit is refused whole with 413 naming the line and the limit.
func TestHTTPSpoutOversized(t *testing.T) {
	cfg := WithTopologySettings(map[string]string{"listen": "127.0.0.1:0"}, map[string]string{"topology.max.tuple.bytes": "100"})
	s, err := newSpout("http", cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := &recorder{}
	if err := s.Open(context.Background(), taskContext("c", 0, 1, cfg, map[string][]string{"default": {"line"}}, nil), out); err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	resp, err := http.Post("http://"+s.(*httpSpout).Addr()+"/ingest", "text/plain", strings.NewReader("ok\n"+strings.Repeat("x", 94)+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "line 2: a tuple of 101 bytes exceeds topology.max.tuple.bytes 100") {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if st, _ := s.Next(context.Background(), 10, out); st != plugin.Idle || len(out.emits) != 0 {
		t.Fatalf("something of the refused body was taken: %v, %d", st, len(out.emits))
	}
}

// TestPulsarSpoutOversized: a message over the tuple limit goes to
// dead_letter_topic (listed by ardea dlq with its source and the reason)
// and is acked while the others flow; without one the spout leaves it
// unacked and ends its input with the error.
func TestPulsarSpoutOversized(t *testing.T) {
	url := testbroker.SharedPulsar(t)
	topic, dlq := pulsarTopic(), pulsarTopic()
	limits := map[string]string{"topology.max.tuple.bytes": "300"}
	big := strings.Repeat("B", 400)
	open := func(t *testing.T, cfg map[string]string) (plugin.Spout, *recorder) {
		s, err := newSpout("pulsar", cfg)
		if err != nil {
			t.Fatal(err)
		}
		out := &recorder{}
		if err := s.Open(context.Background(), taskContext("c", 0, 1, cfg, map[string][]string{"default": pulsarFields}, nil), out); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close(context.Background()) })
		return s, out
	}
	dlCfg := WithTopologySettings(map[string]string{"url": url, "topics": topic, "subscription": "dl", "dead_letter_topic": dlq}, limits)
	stopCfg := WithTopologySettings(map[string]string{"url": url, "topics": topic, "subscription": "stop"}, limits)
	sDL, outDL := open(t, dlCfg)
	sStop, outStop := open(t, stopCfg)
	cl, err := pulsarClient(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	p, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, v := range []string{"m0", big, "m2"} {
		if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(v)}); err != nil {
			t.Fatal(err)
		}
	}

	testutil.Eventually(t, "two messages", func() bool {
		if _, err := sDL.Next(context.Background(), 10, outDL); err != nil {
			t.Fatal(err)
		}
		return len(outDL.emits) >= 2
	})
	dl, err := deadLetters(context.Background(), "test", "c", "builtin:pulsar", dlCfg)
	if err != nil || len(dl) != 1 {
		t.Fatalf("DeadLetters = %+v, %v", dl, err)
	}
	if d := dl[0]; d.Value != big || !strings.HasPrefix(d.Source, topic+" ") || d.Failures != 0 || !strings.HasSuffix(d.Error, " bytes exceeds topology.max.tuple.bytes 300") {
		t.Fatalf("dead letter %+v", d)
	}

	var st plugin.Status
	testutil.Eventually(t, "the oversized message", func() bool {
		st, err = sStop.Next(context.Background(), 10, outStop)
		return err != nil
	})
	var tooLarge *recordTooLargeError
	if st != plugin.Done || !errors.As(err, &tooLarge) || !strings.HasPrefix(tooLarge.Source, topic+" ") || len(outStop.emits) != 1 {
		t.Fatalf("Next = %v, %v after %d emits", st, err, len(outStop.emits))
	}
}
