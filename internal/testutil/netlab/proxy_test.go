package netlab

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/testutil"
)

// The proxy's tests run on loopback in the test's own namespace (no
// process, no privilege): they are in the fast tier. Timing assertions
// are lower bounds only: a proxy cannot deliver before its schedule, but
// a busy machine can always deliver later.

func dialProxy(t testing.TB, p *LinkProxy) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", p.Addr(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestProxyDelay(t *testing.T) {
	up := loopbackEcho(t)
	n := testutil.Volume(50, 20)

	direct, err := net.Dial("tcp", up)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	t.Logf("direct round trip: %s", summary(roundTrips(t, direct, n, 64)))

	const delay = 20 * time.Millisecond
	p := Proxy(t, "", up, Link{Delay: delay})
	rtts := roundTrips(t, dialProxy(t, p), n, 64)
	for k, rtt := range rtts {
		if rtt < 2*delay {
			t.Fatalf("round trip %d took %v through a %v link: less than 2*Delay", k, rtt, delay)
		}
	}
	t.Logf("round trip through Delay %v: %s", delay, summary(rtts))

	// Jitter adds [0, Jitter) each way: never less than 2*Delay.
	if err := p.SetLink(Link{Delay: 5 * time.Millisecond, Jitter: 20 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	rtts = roundTrips(t, dialProxy(t, p), n, 64)
	for k, rtt := range rtts {
		if rtt < 10*time.Millisecond {
			t.Fatalf("round trip %d took %v through Delay 5ms: less than 2*Delay", k, rtt)
		}
	}
	t.Logf("round trip through Delay 5ms, Jitter 20ms: %s", summary(rtts))
	if s := p.Stats(); s.Accepted != 2 || s.Segments != int64(4*n) || s.Bytes != int64(4*n*64) {
		t.Errorf("stats %+v, want 2 connections, %d segments of 64 bytes", s, 4*n)
	}
}

func TestProxyBandwidth(t *testing.T) {
	up := loopbackEcho(t)
	const bw = 1 << 20 // 1 MiB/s each way
	size := testutil.Volume(256<<10, 64<<10)
	p := Proxy(t, "", up, Link{Bandwidth: bw})
	c := dialProxy(t, p)
	start := time.Now()
	errc := make(chan error, 1)
	go func() {
		_, err := c.Write(make([]byte, size))
		errc <- err
	}()
	if _, err := io.ReadFull(c, make([]byte, size)); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	// Each direction needs size/bw on its wire; they overlap, so the
	// whole echo takes at least that.
	if min := time.Duration(size) * time.Second / bw; took < min {
		t.Fatalf("%d bytes echoed through %d B/s in %v: faster than the wire (%v)", size, bw, took, min)
	}
	t.Logf("%d KiB echoed through 1 MiB/s each way in %v", size>>10, took.Round(time.Millisecond))
}

// lossRun makes n round trips of 64 bytes through a proxy losing Loss of
// its segments (RTO 30 ms) and returns the proxy's stats and the number
// of round trips that took RTO or more.
func lossRun(t *testing.T, seed uint64, n int) (Stats, int) {
	const rto = 30 * time.Millisecond
	up := loopbackEcho(t)
	p := Proxy(t, "", up, Link{Loss: 0.1, RTO: rto, Seed: seed})
	rtts := roundTrips(t, dialProxy(t, p), n, 64)
	slow := 0
	for _, rtt := range rtts {
		if rtt >= rto {
			slow++
		}
	}
	return p.Stats(), slow
}

func TestProxyLoss(t *testing.T) {
	n := testutil.Volume(400, 150)
	s, slow := lossRun(t, 42, n)
	segments := int64(2 * n)
	if s.Segments != segments {
		t.Fatalf("%d segments delivered, want %d (loss delays, it never drops)", s.Segments, segments)
	}
	// Expected 10% of the segments; the range is wide (the exact count
	// depends on the seed only).
	if lo, hi := segments*4/100, segments*18/100; s.Lost < lo || s.Lost > hi {
		t.Errorf("%d of %d segments lost at Loss 0.1, want %d to %d", s.Lost, segments, lo, hi)
	}
	if s.Retransmits < s.Lost {
		t.Errorf("%d retransmits for %d segments lost", s.Retransmits, s.Lost)
	}
	// A round trip with a lost segment takes at least an RTO, and there
	// are at least Lost/2 of those (two segments per round trip).
	if int64(slow) < (s.Lost+1)/2 {
		t.Errorf("%d round trips took an RTO or more; %d segments were lost", slow, s.Lost)
	}
	t.Logf("Loss 0.1, %d round trips: %d segments lost (%d retransmits), %d round trips ≥ RTO", n, s.Lost, s.Retransmits, slow)
}

func TestProxyLossReproducible(t *testing.T) {
	n := testutil.Volume(200, 80)
	a, _ := lossRun(t, 7, n)
	b, _ := lossRun(t, 7, n)
	if a.Lost != b.Lost || a.Retransmits != b.Retransmits || a.Seed != 7 {
		t.Errorf("seed 7 twice: %+v, then %+v", a, b)
	}
	up := loopbackEcho(t)
	if s := Proxy(t, "", up, Link{}).Stats(); s.Seed == 0 {
		t.Error("Seed 0: no seed picked")
	}
}

func TestProxyReset(t *testing.T) {
	up := loopbackEcho(t)
	p := Proxy(t, "", up, Link{Reset: 0.05, Seed: 3})
	c := dialProxy(t, p)
	msg, got := make([]byte, 16), make([]byte, 16)
	var err error
	trips := 0
	for ; trips < 1000 && err == nil; trips++ {
		if _, err = c.Write(msg); err == nil {
			_, err = io.ReadFull(c, got)
		}
	}
	if err == nil || !isReset(err) {
		t.Fatalf("after %d round trips at Reset 0.05: %v, want the connection cut", trips, err)
	}
	if s := p.Stats(); s.Resets != 1 {
		t.Errorf("%d resets counted, want 1", s.Resets)
	}
	t.Logf("cut after %d round trips: %v", trips, err)
	// The proxy goes on: a new connection works.
	if err := p.SetLink(Link{}); err != nil {
		t.Fatal(err)
	}
	roundTrips(t, dialProxy(t, p), 3, 16)
}

func TestProxyResetConns(t *testing.T) {
	up := loopbackEcho(t)
	p := Proxy(t, "", up, Link{})
	var conns []net.Conn
	for range 3 {
		c := dialProxy(t, p)
		roundTrips(t, c, 1, 8) // the flow is up
		conns = append(conns, c)
	}
	if n := p.ResetConns(); n != 3 {
		t.Fatalf("ResetConns cut %d connections, want 3", n)
	}
	for k, c := range conns {
		c.SetReadDeadline(time.Now().Add(time.Minute)) // a hang guard only
		if _, err := c.Read(make([]byte, 1)); err == nil || !isReset(err) {
			t.Errorf("connection %d after ResetConns: %v", k, err)
		}
	}
	if s := p.Stats(); s.Resets != 3 {
		t.Errorf("%d resets counted, want 3", s.Resets)
	}
}

func TestProxyHalfClose(t *testing.T) {
	// The upstream reads to EOF, then answers with what it read.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	served := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			served <- err
			return
		}
		defer c.Close()
		b, err := io.ReadAll(c)
		if err == nil {
			_, err = c.Write(append([]byte("got "), b...))
		}
		served <- err
	}()
	p := Proxy(t, "", ln.Addr().String(), Link{Delay: time.Millisecond})
	c := dialProxy(t, p)
	if _, err := io.WriteString(c, "abc"); err != nil {
		t.Fatal(err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(c)
	if err != nil || string(b) != "got abc" {
		t.Fatalf("read %q, %v; want \"got abc\" then EOF", b, err)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

func TestProxyDialError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close() // nothing listens there now
	p := Proxy(t, "", dead, Link{})
	// The reset may come before the dial returns, or after.
	c, err := net.DialTimeout("tcp", p.Addr(), 10*time.Second)
	if err == nil {
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(time.Minute)) // a hang guard only
		_, err = c.Read(make([]byte, 1))
	}
	if err == nil || !isReset(err) {
		t.Fatalf("through a proxy whose upstream refuses: %v, want a reset", err)
	}
	testutil.Eventually(t, "the dial error counted", func() bool { return p.Stats().DialErrors == 1 })
}

func TestProxyCloseEndsEverything(t *testing.T) {
	up := loopbackEcho(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var d net.Dialer
	p, err := NewProxy(ln, func(ctx context.Context) (net.Conn, error) { return d.DialContext(ctx, "tcp", up) }, Link{Delay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	c := dialProxy(t, p)
	if _, err := c.Write([]byte("stuck for an hour")); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the proxy accepts", func() bool { return p.Stats().Accepted == 1 })
	p.Close() // returns only once its goroutines are done (goleak checks)
	p.Close()
	if _, err := net.Dial("tcp", p.Addr()); err == nil {
		t.Error("the proxy still accepts after Close")
	}
	if _, err := NewProxy(ln, nil, Link{Loss: 2}); err == nil {
		t.Error("NewProxy took Loss 2")
	}
}

func TestCheckLoopback(t *testing.T) {
	for _, ok := range []string{"127.0.0.1:0", "127.1.2.3:80", "[::1]:9", "localhost:4222"} {
		if err := checkLoopback(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"10.1.2.3:80", "0.0.0.0:0", ":0", "[::]:1", "example.com:80", "127.0.0.1"} {
		if err := checkLoopback(bad); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}
