package netlab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// DialFunc opens the upstream connection for each connection a LinkProxy
// accepts.
type DialFunc func(ctx context.Context) (net.Conn, error)

// dialTimeout bounds the upstream dial of one accepted connection.
const dialTimeout = 10 * time.Second

// queueSegments bounds the segments waiting in one direction: with
// Bandwidth, the sender is held back (its TCP window fills) rather than
// buffered without end.
const queueSegments = 256

// LinkProxy is a TCP proxy in the test's process that imposes a Link on
// every connection it carries: each connection accepted on its listener
// is joined to a fresh upstream connection, and each direction is shaped
// on its own. Make one with Proxy (the test's own network namespace,
// loopback only), Lab.ProxyIn (inside a lab namespace), or NewProxy (any
// listener and dialer).
type LinkProxy struct {
	ln   net.Listener
	dial DialFunc
	seed uint64
	link atomic.Pointer[Link]

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	flows  map[*flow]struct{}
	nextID uint64
	closed bool

	accepted, dialErrors, segments, bytes atomic.Int64
	lost, retransmits, resets             atomic.Int64
}

// Stats counts what a LinkProxy did so far, both directions together.
type Stats struct {
	// Accepted is the connections accepted; DialErrors those of them
	// whose upstream could not be dialed (the client got a reset).
	Accepted, DialErrors int64
	// Segments and Bytes are what was delivered (handed to the
	// receiving side's socket).
	Segments, Bytes int64
	// Lost is the segments lost at least once (delivered an RTO or more
	// late); Retransmits counts every loss (a segment lost twice counts
	// twice).
	Lost, Retransmits int64
	// Resets is the connections cut by Link.Reset or ResetConns.
	Resets int64
	// Seed is the seed in use (Link.Seed, or the one picked for 0).
	Seed uint64
}

// NewProxy starts a LinkProxy that accepts on ln (it takes ln over and
// closes it on Close) and dials each upstream with dial. Close it when
// done (Proxy and Lab.ProxyIn do that in the test's cleanup).
func NewProxy(ln net.Listener, dial DialFunc, link Link) (*LinkProxy, error) {
	if err := link.Validate(); err != nil {
		ln.Close()
		return nil, err
	}
	link = link.withDefaults()
	seed := link.Seed
	for seed == 0 {
		seed = rand.Uint64()
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &LinkProxy{ln: ln, dial: dial, seed: seed, ctx: ctx, cancel: cancel, flows: map[*flow]struct{}{}}
	p.link.Store(&link)
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Proxy starts a LinkProxy in the test's own network namespace that
// listens on listen and forwards to upstream, both loopback addresses
// ("127.0.0.1:0" picks a port: see Addr; "" is "127.0.0.1:0"). A lab's
// addresses are not reachable from here (see Lab.ProxyIn), and nothing
// outside the machine is a place for test traffic, so any other address
// fails the test. The proxy is closed in t's cleanup.
func Proxy(t testing.TB, listen, upstream string, link Link) *LinkProxy {
	t.Helper()
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	for _, a := range []string{listen, upstream} {
		if err := checkLoopback(a); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		t.Fatalf("netlab: proxy listen: %v", err)
	}
	var d net.Dialer
	p, err := NewProxy(ln, func(ctx context.Context) (net.Conn, error) {
		return d.DialContext(ctx, "tcp", upstream)
	}, link)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// checkLoopback accepts host:port where host is localhost or a loopback
// address.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("netlab: %q: %v", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.IsLoopback() {
		return fmt.Errorf("netlab: %q is not a loopback address: Proxy runs in the test's own network namespace, where only loopback is a place for test traffic (Lab.ProxyIn reaches a lab)", addr)
	}
	return nil
}

// Addr is the address the proxy listens on.
func (p *LinkProxy) Addr() string { return p.ln.Addr().String() }

// Link is the Link in force.
func (p *LinkProxy) Link() Link { return *p.link.Load() }

// SetLink changes the Link; it applies to the segments read from then on,
// in every connection (the random generators go on, seeded as before).
func (p *LinkProxy) SetLink(link Link) error {
	if err := link.Validate(); err != nil {
		return err
	}
	link = link.withDefaults()
	p.link.Store(&link)
	return nil
}

// Stats returns the counts so far.
func (p *LinkProxy) Stats() Stats {
	return Stats{
		Accepted: p.accepted.Load(), DialErrors: p.dialErrors.Load(),
		Segments: p.segments.Load(), Bytes: p.bytes.Load(),
		Lost: p.lost.Load(), Retransmits: p.retransmits.Load(),
		Resets: p.resets.Load(), Seed: p.seed,
	}
}

// ResetConns cuts every connection open now (both sides get a reset)
// and returns how many; the proxy goes on accepting.
func (p *LinkProxy) ResetConns() int {
	p.mu.Lock()
	flows := make([]*flow, 0, len(p.flows))
	for f := range p.flows {
		flows = append(flows, f)
	}
	p.mu.Unlock()
	n := 0
	for _, f := range flows {
		if f.abort(true) {
			n++
		}
	}
	return n
}

// Close stops accepting, closes every connection and waits for the
// proxy's goroutines to end. It is idempotent.
func (p *LinkProxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	flows := make([]*flow, 0, len(p.flows))
	for f := range p.flows {
		flows = append(flows, f)
	}
	p.mu.Unlock()
	p.cancel()
	err := p.ln.Close()
	for _, f := range flows {
		f.abort(false)
	}
	p.wg.Wait()
	return err
}

func (p *LinkProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return // closed (or broken: nothing more to accept)
		}
		p.accepted.Add(1)
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			return
		}
		id := p.nextID
		p.nextID++
		p.wg.Add(1)
		p.mu.Unlock()
		go p.serve(c, id)
	}
}

// serve dials the upstream of client and runs the connection.
func (p *LinkProxy) serve(client net.Conn, id uint64) {
	defer p.wg.Done()
	ctx, cancel := context.WithTimeout(p.ctx, dialTimeout)
	up, err := p.dial(ctx)
	cancel()
	if err != nil {
		p.dialErrors.Add(1)
		setLinger0(client) // as a refused connection: a reset, not an EOF
		client.Close()
		return
	}
	f := &flow{p: p, client: client, upstream: up, done: make(chan struct{})}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		client.Close()
		up.Close()
		return
	}
	p.flows[f] = struct{}{}
	p.mu.Unlock()

	var dirs sync.WaitGroup
	dirs.Add(2)
	go func() { defer dirs.Done(); f.direction(client, up, newShaper(p.seed, id, 0)) }()
	go func() { defer dirs.Done(); f.direction(up, client, newShaper(p.seed, id, 1)) }()
	dirs.Wait()
	f.abort(false)
	p.mu.Lock()
	delete(p.flows, f)
	p.mu.Unlock()
}

// flow is one proxied connection.
type flow struct {
	p                *LinkProxy
	client, upstream net.Conn
	once             sync.Once
	done             chan struct{}
}

// abort closes both sides once (with a reset, counted, when reset),
// reporting whether this call did it.
func (f *flow) abort(reset bool) bool {
	did := false
	f.once.Do(func() {
		did = true
		if reset {
			f.p.resets.Add(1) // before the peers can see it
			setLinger0(f.client)
			setLinger0(f.upstream)
		}
		close(f.done)
		f.client.Close()
		f.upstream.Close()
	})
	return did
}

func setLinger0(c net.Conn) {
	if tc, ok := c.(interface{ SetLinger(int) error }); ok {
		tc.SetLinger(0)
	}
}

type segment struct {
	data []byte
	due  time.Time
}

// direction copies src to dst through the Link: this goroutine reads and
// schedules, a second one delivers each segment at its due time.
func (f *flow) direction(src, dst net.Conn, s *shaper) {
	q := make(chan segment, queueSegments)
	var eof bool // set before q is closed
	delivered := make(chan struct{})
	go func() {
		defer close(delivered)
		f.deliver(dst, q, &eof)
	}()
	defer func() { <-delivered }()
	defer close(q)

	buf := make([]byte, maxSegment)
	for {
		n, err := src.Read(buf)
		for off := 0; off < n; {
			link := f.p.link.Load()
			size := n - off
			if link.segmented() {
				size = min(size, link.Segment)
			}
			v := s.schedule(link, time.Now(), size)
			if v.reset {
				f.abort(true)
				return
			}
			if v.losses > 0 {
				f.p.lost.Add(1)
				f.p.retransmits.Add(int64(v.losses))
			}
			seg := segment{data: append([]byte(nil), buf[off:off+size]...), due: v.due}
			off += size
			select {
			case q <- seg:
			case <-f.done:
				return
			}
		}
		if err != nil {
			if err == io.EOF {
				eof = true
			} else {
				f.abort(false)
			}
			return
		}
	}
}

// deliver writes each segment of q to dst at its due time; when q is
// closed after an EOF it half-closes dst, as the sender did.
func (f *flow) deliver(dst net.Conn, q <-chan segment, eof *bool) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for seg := range q {
		if d := time.Until(seg.due); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-f.done:
				timer.Stop()
				return
			}
		}
		// Counted before the write: once the peer has it, Stats has it.
		f.p.segments.Add(1)
		f.p.bytes.Add(int64(len(seg.data)))
		if _, err := dst.Write(seg.data); err != nil {
			f.abort(false)
			return
		}
	}
	if !*eof {
		return
	}
	if cw, ok := dst.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
		return
	}
	f.abort(false)
}
