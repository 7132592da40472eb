package netlab

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Link is what a LinkProxy does to each direction of every connection it
// carries. The zero Link forwards at once and loses nothing.
//
// The unit of every decision is a segment: at most Segment bytes of what
// one read from the sending side returned, as a TCP segment is at most
// one MSS of what the sender wrote. A small write (a NATS PING, a
// protocol line) is one segment of its own.
type Link struct {
	// Delay is the one-way latency added to every segment, in each
	// direction: a request and its reply through the proxy take at least
	// 2*Delay more than without it.
	Delay time.Duration
	// Jitter adds a uniformly random extra delay in [0, Jitter) to each
	// segment. The stream stays in order (TCP delivers in order): a
	// segment never overtakes the one before it, so jitter shows as
	// bursts, never as reordering.
	Jitter time.Duration
	// Bandwidth limits each direction to this many bytes per second (0:
	// unlimited). Segments queue behind each other as on a slow wire;
	// the queue is bounded, so a fast sender is slowed down (its TCP
	// window fills), never buffered without end.
	Bandwidth int64
	// Loss is the probability, in [0, 1), that a segment is lost on the
	// wire. TCP makes a lost segment late, not missing: the sender
	// retransmits it after RTO, and the receiver holds every byte behind
	// it until it arrives (head-of-line blocking). So a lost segment is
	// delivered RTO later, together with everything queued behind it; a
	// retransmission is lost again with the same probability and then
	// costs twice the previous RTO (exponential backoff, at most 6
	// times). Data is never dropped or corrupted.
	Loss float64
	// RTO is what one loss costs: the retransmission timeout (0: 200 ms,
	// Linux's minimum RTO, what a loss costs on a LAN where the RTT is
	// far below it).
	RTO time.Duration
	// Reset is the probability, in [0, 1], per segment that the
	// connection is cut: that segment and everything behind it is
	// dropped and both sides get a TCP reset, as when a firewall or NAT
	// forgets the flow or the retransmissions run out during a long
	// outage. It is what makes NATS reconnect a route; Loss never does.
	Reset float64
	// Segment is the most bytes in one segment (0: 1448, the TCP payload
	// of a 1500-byte Ethernet frame with timestamps). With none of
	// Jitter, Bandwidth, Loss and Reset, every segment of a read would
	// get the same fate: the read is passed whole (and counted as one
	// segment).
	Segment int
	// Seed makes the random choices (jitter, loss, reset) reproducible:
	// connection k of a proxy (k counts accepted connections from 0)
	// draws from a generator seeded with (Seed, k, direction), so the
	// same Seed and the same sequence of reads give the same segments
	// lost. 0 picks a random seed, which LinkProxy.Stats reports so that
	// a failing run can be replayed.
	Seed uint64
}

const (
	// DefaultRTO is Link.RTO's default.
	DefaultRTO = 200 * time.Millisecond
	// DefaultSegment is Link.Segment's default.
	DefaultSegment = 1448
	// maxBackoffs bounds the retransmissions of one segment.
	maxBackoffs = 6
	// maxSegment bounds Link.Segment (a read buffer holds this much).
	maxSegment = 64 << 10
)

// Validate reports what is wrong with l, or nil.
func (l Link) Validate() error {
	switch {
	case l.Delay < 0:
		return fmt.Errorf("netlab: Link.Delay %v is negative", l.Delay)
	case l.Jitter < 0:
		return fmt.Errorf("netlab: Link.Jitter %v is negative", l.Jitter)
	case l.Bandwidth < 0:
		return fmt.Errorf("netlab: Link.Bandwidth %d is negative", l.Bandwidth)
	case !(l.Loss >= 0 && l.Loss < 1):
		return fmt.Errorf("netlab: Link.Loss %v is not in [0, 1)", l.Loss)
	case l.RTO < 0:
		return fmt.Errorf("netlab: Link.RTO %v is negative", l.RTO)
	case !(l.Reset >= 0 && l.Reset <= 1):
		return fmt.Errorf("netlab: Link.Reset %v is not in [0, 1]", l.Reset)
	case l.Segment < 0 || l.Segment > maxSegment:
		return fmt.Errorf("netlab: Link.Segment %d is not in [0, %d]", l.Segment, maxSegment)
	}
	return nil
}

func (l Link) withDefaults() Link {
	if l.RTO == 0 {
		l.RTO = DefaultRTO
	}
	if l.Segment == 0 {
		l.Segment = DefaultSegment
	}
	return l
}

// segmented reports whether segments matter: where every segment of a
// read gets the same fate (Delay alone, or nothing), a read is passed
// whole, at the speed of a plain copy.
func (l *Link) segmented() bool {
	return l.Jitter > 0 || l.Bandwidth > 0 || l.Loss > 0 || l.Reset > 0
}

// shaper schedules the segments of one direction of one connection.
type shaper struct {
	rng *rand.Rand
	// wireFree is when the wire has sent every segment scheduled so
	// far (Bandwidth).
	wireFree time.Time
	// lastDue is when the last segment scheduled is delivered: the
	// next one is never delivered before it (in-order delivery).
	lastDue time.Time
}

func newShaper(seed, conn uint64, dir int) *shaper {
	return &shaper{rng: rand.New(rand.NewPCG(seed, conn<<1|uint64(dir)))}
}

// verdict is what happens to one segment.
type verdict struct {
	// due is when it is delivered (meaningless when reset).
	due time.Time
	// losses is how many times it was lost (each cost an RTO).
	losses int
	// reset: the connection is cut at this segment.
	reset bool
}

// schedule decides the fate of a segment of size bytes read at now. l
// must have its defaults. The random draws happen in a fixed order
// (jitter, reset, losses), each only when its knob is set, so that a
// seeded run is reproducible.
func (s *shaper) schedule(l *Link, now time.Time, size int) verdict {
	sent := now
	if s.wireFree.After(sent) {
		sent = s.wireFree
	}
	if l.Bandwidth > 0 {
		sent = sent.Add(time.Duration(int64(size) * int64(time.Second) / l.Bandwidth))
	}
	s.wireFree = sent
	due := sent.Add(l.Delay)
	if l.Jitter > 0 {
		due = due.Add(time.Duration(s.rng.Int64N(int64(l.Jitter))))
	}
	var v verdict
	if l.Reset > 0 && s.rng.Float64() < l.Reset {
		v.reset = true
		return v
	}
	if l.Loss > 0 {
		rto := l.RTO
		for v.losses < maxBackoffs && s.rng.Float64() < l.Loss {
			due = due.Add(rto)
			rto *= 2
			v.losses++
		}
	}
	if due.Before(s.lastDue) {
		due = s.lastDue
	}
	s.lastDue = due
	v.due = due
	return v
}
