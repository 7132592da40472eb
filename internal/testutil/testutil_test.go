package testutil

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is a testing.TB whose Fatalf records the message and ends the
// goroutine, as the real one does.
type recorder struct {
	testing.TB
	mu  sync.Mutex
	msg string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.mu.Lock()
	r.msg = fmt.Sprintf(format, args...)
	r.mu.Unlock()
	runtime.Goexit()
}

func run(t *testing.T, f func(tb testing.TB)) string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.msg
}

func TestEventually(t *testing.T) {
	n := 0
	if msg := run(t, func(tb testing.TB) {
		Eventually(tb, "three calls", func() bool { n++; return n == 3 })
	}); msg != "" || n != 3 {
		t.Fatalf("bool: %q after %d calls", msg, n)
	}
	for _, tc := range []struct {
		name string
		wait func(tb testing.TB)
		want string
	}{
		{"bool", func(tb testing.TB) { EventuallyWithin(tb, 30*time.Millisecond, "never", func() bool { return false }) },
			"never: not within 30ms"},
		{"error", func(tb testing.TB) {
			EventuallyWithin(tb, 30*time.Millisecond, "the sink", func() error { return errors.New("0 bytes") })
		}, "the sink: not within 30ms (last seen: 0 bytes)"},
		{"detail", func(tb testing.TB) {
			EventuallyWithin(tb, 30*time.Millisecond, "RUNNING", func() (bool, string) { return false, "PAUSED" })
		}, "RUNNING: not within 30ms (last seen: PAUSED)"},
	} {
		if msg := run(t, tc.wait); msg != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, msg, tc.want)
		}
	}
}

func TestAwait(t *testing.T) {
	n := 0
	if err := Await(time.Minute, "three calls", func() bool { n++; return n == 3 }); err != nil || n != 3 {
		t.Fatalf("%v after %d calls", err, n)
	}
	err := Await(30*time.Millisecond, "RUNNING", func() (bool, string) { return false, "PAUSED" })
	if want := "RUNNING: not within 30ms (last seen: PAUSED)"; err == nil || err.Error() != want {
		t.Errorf("%v, want %s", err, want)
	}
}

func TestGolden(t *testing.T) {
	msg := run(t, func(tb testing.TB) { Golden(tb, "no-such-file.txt", []byte("x")) })
	if !strings.Contains(msg, "testdata/no-such-file.txt") || !strings.Contains(msg, "-update") {
		t.Fatalf("missing golden file: %q", msg)
	}
}

func TestStartsProcessesSkipsOnlyUnderShort(t *testing.T) {
	ran := false
	t.Run("inner", func(t *testing.T) {
		StartsProcesses(t, "nothing")
		ran = true
	})
	if ran == testing.Short() {
		t.Errorf("under -short=%v the test went on: %v", testing.Short(), ran)
	}
}

func TestVolume(t *testing.T) {
	want := 1000
	if testing.Short() || Race {
		want = 10
	}
	if got := Volume(1000, 10); got != want {
		t.Errorf("Volume(1000, 10) = %d, want %d (short %v, race %v)", got, want, testing.Short(), Race)
	}
}
