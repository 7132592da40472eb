package sinks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const (
	graphiteTimeout    = 2 * time.Second // dial and write
	graphiteMinBackoff = 100 * time.Millisecond
	graphiteMaxBackoff = 10 * time.Second
	graphiteBuffer     = 1 << 20
)

var errGraphiteClosed = errors.New("graphite: sink closed")

// graphite writes Graphite's plaintext protocol over TCP, one line per
// sample:
//
//	prefix.topology.component.source.metric value epoch
//
// Counters send Delta (Heron sends per-interval counts), gauges Value.
//
// The connection is made on the first Write (2 s timeout) and remade after
// a failure, with back-off between dial attempts (100 ms doubling to 10 s);
// a Write during back-off only buffers. Lines not sent wait in a buffer of
// BufferBytes whose oldest lines are dropped (and counted by Dropped) when
// a new batch does not fit. Each write has a 2 s deadline and ends early
// when ctx does.
//
// Write must be called from one goroutine at a time; Dropped, Sent and
// Close may be called concurrently with it. Close interrupts a Write in
// progress and discards what is still buffered.
type graphite struct {
	cfg    graphiteConfig
	prefix []byte // sanitised
	log    *slog.Logger
	dial   func(ctx context.Context, network, addr string) (net.Conn, error)
	now    func() time.Time // the back-off's clock

	mu     sync.Mutex // guards conn and closed against Close
	conn   net.Conn
	closed bool

	// Owned by the writer.
	pending lineQueue
	retry   redial

	dropped atomic.Int64
	sent    atomic.Int64
}

// newGraphite returns the sink; it connects on the first Write.
func newGraphite(cfg graphiteConfig, log *slog.Logger) (*graphite, error) {
	if cfg.Address == "" {
		return nil, errors.New("graphite: address is required")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "ardea"
	}
	if cfg.BufferBytes <= 0 {
		cfg.BufferBytes = graphiteBuffer
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := &net.Dialer{Timeout: graphiteTimeout}
	return &graphite{cfg: cfg, prefix: graphiteSegments(nil, cfg.Prefix), log: log, dial: d.DialContext, now: time.Now,
		retry: redial{min: graphiteMinBackoff, max: graphiteMaxBackoff}}, nil
}

// Write buffers the batch's lines and sends everything buffered. It
// returns an error when the lines could not be sent now (they stay
// buffered for the next Write) or some had to be dropped.
func (g *graphite) Write(ctx context.Context, b *Batch) error {
	if g.isClosed() {
		return errGraphiteClosed
	}
	for i := range b.Samples {
		s := &b.Samples[i]
		topology := s.Topology
		if topology == "" {
			topology = b.Topology
		}
		v := s.Value
		if s.Kind == Counter {
			v = s.Delta
		}
		g.pending.push(appendGraphiteLine(g.pending.data, g.prefix, topology, s, v, b.Time.Unix()))
	}
	dropped := g.pending.trim(g.cfg.BufferBytes)
	if dropped > 0 {
		g.dropped.Add(int64(dropped))
		if g.retry.dropping(dropped) {
			g.log.Warn("graphite: buffer full, dropping the oldest lines", "address", g.cfg.Address, "buffer_bytes", g.cfg.BufferBytes)
		}
	}
	err := g.flush(ctx)
	if err == nil && dropped > 0 { // what is left was sent, but not everything
		err = fmt.Errorf("graphite %s: buffer full, %d lines dropped", g.cfg.Address, dropped)
	}
	return err
}

// appendGraphiteLine appends one line to dst. prefix is already
// sanitised (it may have several segments).
func appendGraphiteLine(dst, prefix []byte, topology string, s *Sample, v float64, epoch int64) []byte {
	dst = append(dst, prefix...)
	for _, seg := range []string{topology, s.Component, s.Source()} {
		dst = appendGraphiteSegment(append(dst, '.'), seg)
	}
	// '/' separates a name from its stream or peer; a '.' inside either
	// must not add a segment.
	for _, seg := range strings.Split(s.FullName(), "/") {
		dst = appendGraphiteSegment(append(dst, '.'), seg)
	}
	dst = strconv.AppendFloat(append(dst, ' '), v, 'f', -1, 64)
	dst = strconv.AppendInt(append(dst, ' '), epoch, 10)
	return append(dst, '\n')
}

// graphiteSegments appends a dotted path, each segment sanitised.
func graphiteSegments(dst []byte, path string) []byte {
	for i, seg := range strings.Split(path, ".") {
		if i > 0 {
			dst = append(dst, '.')
		}
		dst = appendGraphiteSegment(dst, seg)
	}
	return dst
}

// appendGraphiteSegment keeps a name one path segment: anything but
// [A-Za-z0-9_-] becomes '_' (a '.' would split it, a space end the path),
// and an empty name '_' (carbon would make an empty directory name).
func appendGraphiteSegment(dst []byte, seg string) []byte {
	if seg == "" {
		return append(dst, '_')
	}
	for _, r := range seg {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			dst = append(dst, byte(r))
		} else {
			dst = append(dst, '_')
		}
	}
	return dst
}

// flush sends the buffered lines.
func (g *graphite) flush(ctx context.Context) error {
	if g.pending.len() == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return g.unsent(err)
	}
	c, err := g.connection(ctx)
	if err != nil {
		return g.unsent(err)
	}
	deadline := time.Now().Add(graphiteTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = c.SetWriteDeadline(deadline)
	// A deadline in the past wakes a blocked Write when ctx ends.
	interrupted := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		_ = c.SetWriteDeadline(time.Unix(1, 0))
		close(interrupted)
	})
	n, err := c.Write(g.pending.bytes())
	if !stop() {
		<-interrupted // so it cannot touch the next write's deadline
	}
	// Lines written whole are gone; a partly written one is sent again
	// (carbon discards an unterminated line when the connection ends).
	g.sent.Add(int64(g.pending.popBytes(n)))
	if err != nil {
		g.disconnect(c)
		g.failed()
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = ctxErr
		}
		return g.unsent(err)
	}
	if was, dropped := g.retry.delivered(); was {
		g.log.Info("graphite: sending again", "address", g.cfg.Address, "dropped", dropped)
	}
	return nil
}

// connection returns the connection, dialling unless in back-off.
func (g *graphite) connection(ctx context.Context) (net.Conn, error) {
	g.mu.Lock()
	c, closed := g.conn, g.closed
	g.mu.Unlock()
	switch {
	case closed:
		return nil, errGraphiteClosed
	case c != nil:
		return c, nil
	}
	if wait := g.retry.wait(g.now()); wait > 0 {
		return nil, fmt.Errorf("not connected, next attempt in %v", wait)
	}
	c, err := g.dial(ctx, "tcp", g.cfg.Address)
	if err != nil {
		g.failed()
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		c.Close()
		return nil, errGraphiteClosed
	}
	g.conn = c
	return c, nil
}

func (g *graphite) disconnect(c net.Conn) {
	g.mu.Lock()
	if g.conn == c {
		g.conn = nil
	}
	g.mu.Unlock()
	_ = c.Close()
}

// failed schedules the next dial (reset only by a successful write).
func (g *graphite) failed() { g.retry.failed(g.now()) }

// unsent logs the first failure of a run and returns err with context.
func (g *graphite) unsent(err error) error {
	if errors.Is(err, errGraphiteClosed) {
		return err
	}
	if g.retry.undelivered() {
		g.log.Warn("graphite: cannot send, buffering", "address", g.cfg.Address, "err", err)
	} else {
		g.log.Debug("graphite: cannot send", "address", g.cfg.Address, "err", err)
	}
	return fmt.Errorf("graphite %s: %w (%d lines buffered)", g.cfg.Address, err, g.pending.len())
}

func (g *graphite) isClosed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed
}

// Dropped counts lines dropped because the buffer was full.
func (g *graphite) Dropped() int64 { return g.dropped.Load() }

// Sent counts lines written to the connection.
func (g *graphite) Sent() int64 { return g.sent.Load() }

// Close closes the connection; later Writes fail.
func (g *graphite) Close() error {
	g.mu.Lock()
	c := g.conn
	g.conn, g.closed = nil, true
	g.mu.Unlock()
	if c != nil {
		return c.Close()
	}
	return nil
}

// lineQueue holds lines oldest first in one slice, so that a flush is one
// write and dropping the oldest lines is cheap.
type lineQueue struct {
	data  []byte // data[head:] is queued
	head  int
	ends  []int // ends[first:]: the queued lines' end offsets in data
	first int
}

func (q *lineQueue) len() int      { return len(q.ends) - q.first }
func (q *lineQueue) size() int     { return len(q.data) - q.head }
func (q *lineQueue) bytes() []byte { return q.data[q.head:] }

// push takes q.data with one line appended.
func (q *lineQueue) push(data []byte) {
	q.data = data
	q.ends = append(q.ends, len(data))
}

// trim drops the oldest lines until the queue fits in limit bytes and
// returns how many it dropped.
func (q *lineQueue) trim(limit int) int {
	k := 0
	for q.size() > limit {
		q.pop(1)
		k++
	}
	return k
}

// popBytes drops the lines that lie wholly in the first n bytes.
func (q *lineQueue) popBytes(n int) int {
	k := 0
	for q.first+k < len(q.ends) && q.ends[q.first+k]-q.head <= n {
		k++
	}
	q.pop(k)
	return k
}

func (q *lineQueue) pop(k int) {
	if k == 0 {
		return
	}
	q.first += k
	if q.first == len(q.ends) {
		q.data, q.ends, q.head, q.first = q.data[:0], q.ends[:0], 0, 0
		return
	}
	q.head = q.ends[q.first-1]
	if q.head > len(q.data)/2 { // compact, amortised over the pops
		q.data = q.data[:copy(q.data, q.data[q.head:])]
		n := copy(q.ends, q.ends[q.first:])
		q.ends = q.ends[:n]
		for i := range q.ends {
			q.ends[i] -= q.head
		}
		q.head, q.first = 0, 0
	}
}
