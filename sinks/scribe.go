package sinks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

const (
	scribeDefaultCategory = "ardea"
	scribeConnectTimeout  = 3 * time.Second
	scribeSocketTimeout   = 5 * time.Second // each read and write of a Log call
	scribeMinBackoff      = 100 * time.Millisecond
	scribeMaxBackoff      = 10 * time.Second
	scribeMaxPending      = 10000 // entries kept for the next Write
)

var (
	errScribeClosed = errors.New("scribe: sink closed")
	// errScribeTryLater: the server answered TRY_LATER; the entries are
	// kept for the next Write.
	errScribeTryLater = errors.New("server answered TRY_LATER")
)

// scribeSink sends each batch to a Scribe server as one Thrift Log call
// (framed transport, binary protocol), one LogEntry per sample in the
// configured category. An entry's message is a compact JSON object:
//
//	{"timestamp":1700000000,"topology":"wc","component":"count","source":"3","name":"__execute-count","kind":"counter","value":300}
//
// timestamp is the batch's time in Unix seconds, source is Sample.Source,
// name Sample.FullName; value is Delta for counters (Heron's per-interval
// counts) and Value for gauges (null when it is NaN or infinite, which
// JSON cannot hold). The batch's exceptions are not sent.
//
// The connection is made on the first Write (3 s connect timeout, 5 s for
// each read and write) and kept. When a Log call fails the connection is
// closed and redialled on a later Write, with back-off between attempts
// (100 ms doubling to 10 s); a Write during back-off only buffers. Entries
// not acknowledged with OK — the server answered TRY_LATER, the call
// failed or could not be made — stay pending and are sent again, ahead of
// the next batch's, in the next Write's Log call. At most 10 000 entries
// are pending; past that the oldest are dropped and counted by Dropped.
// Delivery is at least once: a call that fails after the server took it
// is sent again.
//
// Concurrency: Write must be called from one goroutine at a time (the
// manager's writer for this sink). Dropped and Sent may be called from any
// goroutine at any time; so may Close, which interrupts a Write in
// progress and discards what is pending.
type scribeSink struct {
	cfg  scribeConfig
	log  *slog.Logger
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
	now  func() time.Time // the back-off's clock

	mu     sync.Mutex // guards conn and closed against Close
	conn   net.Conn   // nil: not connected
	closed bool

	// Owned by the writer.
	pending []ScribeEntry // oldest first
	seq     int32         // the last Log call's sequence number
	buf     []byte        // the frames written and read
	retry   redial

	dropped atomic.Int64
	sent    atomic.Int64
}

// newScribe returns the sink for cfg (Address required, Category "ardea"
// by default); it connects on the first Write. log may be nil.
func newScribe(cfg scribeConfig, log *slog.Logger) (*scribeSink, error) {
	if cfg.Address == "" {
		return nil, errors.New("scribe: address is required")
	}
	if cfg.Category == "" {
		cfg.Category = scribeDefaultCategory
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := &net.Dialer{Timeout: scribeConnectTimeout}
	return &scribeSink{
		cfg:   cfg,
		log:   log,
		dial:  d.DialContext,
		now:   time.Now,
		retry: redial{min: scribeMinBackoff, max: scribeMaxBackoff},
	}, nil
}

// Dropped counts the entries dropped from a full pending buffer.
func (s *scribeSink) Dropped() int64 { return s.dropped.Load() }

// Sent counts the entries the server acknowledged with OK.
func (s *scribeSink) Sent() int64 { return s.sent.Load() }

// Write sends the batch's entries, after those still pending, in one Log
// call. It returns an error when they could not be delivered now (they
// stay pending for the next Write) or when some had to be dropped.
func (s *scribeSink) Write(ctx context.Context, b *Batch) error {
	if s.isClosed() {
		return errScribeClosed
	}
	var encErr error
	for i := range b.Samples {
		e, err := s.entry(b, &b.Samples[i])
		if err != nil {
			if encErr == nil {
				encErr = err
			}
			continue
		}
		s.pending = append(s.pending, e)
	}
	dropped := s.trim()
	err := s.flush(ctx)
	if err == nil && dropped > 0 { // what is left was sent, but not everything
		err = fmt.Errorf("scribe %s: pending buffer full, %d entries dropped", s.cfg.Address, dropped)
	}
	return errors.Join(err, encErr)
}

// scribeMessage is an entry's message; the field order is the JSON's.
type scribeMessage struct {
	Timestamp int64       `json:"timestamp"`
	Topology  string      `json:"topology"`
	Component string      `json:"component"`
	Source    string      `json:"source"`
	Name      string      `json:"name"`
	Kind      kind        `json:"kind"`
	Value     scribeValue `json:"value"`
}

// scribeValue is a float64 that encodes NaN and ±Inf as null.
type scribeValue float64

func (v scribeValue) MarshalJSON() ([]byte, error) {
	f := float64(v)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(f)
}

func (s *scribeSink) entry(b *Batch, sm *Sample) (ScribeEntry, error) {
	m := scribeMessage{
		Timestamp: b.Time.Unix(),
		Topology:  sm.Topology,
		Component: sm.Component,
		Source:    sm.Source(),
		Name:      sm.FullName(),
		Kind:      sm.Kind,
		Value:     scribeValue(sm.Value),
	}
	if m.Topology == "" {
		m.Topology = b.Topology
	}
	if sm.Kind == Counter {
		m.Value = scribeValue(sm.Delta)
	}
	msg, err := json.Marshal(m)
	if err != nil {
		return ScribeEntry{}, fmt.Errorf("scribe: encode %s: %w", m.Name, err)
	}
	return ScribeEntry{Category: s.cfg.Category, Message: string(msg)}, nil
}

// trim drops the oldest pending entries past scribeMaxPending and returns
// how many.
func (s *scribeSink) trim() int {
	n := len(s.pending) - scribeMaxPending
	if n <= 0 {
		return 0
	}
	s.pending = slices.Delete(s.pending, 0, n)
	s.dropped.Add(int64(n))
	if s.retry.dropping(n) {
		s.log.Warn("scribe: pending buffer full, dropping the oldest entries",
			"address", s.cfg.Address, "max_pending", scribeMaxPending)
	}
	return n
}

// flush sends everything pending in one Log call.
func (s *scribeSink) flush(ctx context.Context) error {
	if len(s.pending) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return s.unsent(fmt.Errorf("scribe %s: %w", s.cfg.Address, err))
	}
	conn, err := s.connection(ctx)
	if err != nil {
		return s.unsent(err)
	}
	// Closing the connection wakes a call blocked in I/O when ctx ends.
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	rc, err := s.log1(conn)
	interrupted := !stop()
	if err != nil {
		if interrupted {
			err = fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
		s.disconnect()
		s.failed()
		return s.unsent(fmt.Errorf("scribe %s: Log: %w", s.cfg.Address, err))
	}
	if interrupted { // the call completed, but its connection is closed
		s.disconnect()
	}
	s.retry.answered()
	switch rc {
	case scribeOK:
	case scribeTryLater:
		return s.unsent(fmt.Errorf("scribe %s: %w", s.cfg.Address, errScribeTryLater))
	default:
		return s.unsent(fmt.Errorf("scribe %s: unknown result code %d", s.cfg.Address, rc))
	}
	n := len(s.pending)
	s.sent.Add(int64(n))
	clear(s.pending)
	s.pending = s.pending[:0]
	if was, dropped := s.retry.delivered(); was {
		s.log.Info("scribe: delivering again", "address", s.cfg.Address,
			"entries", n, "dropped_meanwhile", dropped)
	}
	return nil
}

// unsent notes that the pending entries could not be delivered and
// returns err.
func (s *scribeSink) unsent(err error) error {
	if s.retry.undelivered() {
		s.log.Warn("scribe: entries not delivered; keeping them for the next write",
			"address", s.cfg.Address, "pending", len(s.pending), "err", err)
	}
	return err
}

// log1 makes one Log call with the pending entries and reads its answer,
// each within scribeSocketTimeout.
func (s *scribeSink) log1(conn net.Conn) (scribeResult, error) {
	s.seq = scribeSeq(s.seq)
	s.buf = appendScribeLogCall(s.buf[:0], s.seq, s.pending)
	if err := conn.SetWriteDeadline(s.now().Add(scribeSocketTimeout)); err != nil {
		return 0, err
	}
	if _, err := conn.Write(s.buf); err != nil {
		return 0, err
	}
	if err := conn.SetReadDeadline(s.now().Add(scribeSocketTimeout)); err != nil {
		return 0, err
	}
	msg, err := readScribeFrame(conn, s.buf, scribeMaxReplyFrame)
	s.buf = msg
	if err != nil {
		return 0, fmt.Errorf("read the reply: %w", err)
	}
	return parseScribeLogReply(msg, s.seq)
}

// connection returns the connection, dialling when there is none and the
// back-off allows.
func (s *scribeSink) connection(ctx context.Context) (net.Conn, error) {
	s.mu.Lock()
	conn, closed := s.conn, s.closed
	s.mu.Unlock()
	if conn != nil {
		return conn, nil
	}
	if closed {
		return nil, errScribeClosed
	}
	if wait := s.retry.wait(s.now()); wait > 0 {
		return nil, fmt.Errorf("scribe %s: not connected, next attempt in %v", s.cfg.Address, wait)
	}
	conn, err := s.dial(ctx, "tcp", s.cfg.Address)
	if err != nil {
		s.failed()
		return nil, fmt.Errorf("scribe %s: connect: %w", s.cfg.Address, err)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = conn.Close()
		return nil, errScribeClosed
	}
	s.conn = conn
	s.mu.Unlock()
	s.log.Debug("scribe: connected", "address", s.cfg.Address)
	return conn, nil
}

// failed backs off before the next dial.
func (s *scribeSink) failed() { s.retry.failed(s.now()) }

func (s *scribeSink) disconnect() {
	s.mu.Lock()
	c := s.conn
	s.conn = nil
	s.mu.Unlock()
	if c != nil {
		_ = c.Close()
	}
}

func (s *scribeSink) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Close closes the connection, interrupting a Write in progress; what is
// pending is discarded. Later Writes fail.
func (s *scribeSink) Close() error {
	s.mu.Lock()
	c := s.conn
	s.conn, s.closed = nil, true
	s.mu.Unlock()
	if c != nil {
		if err := c.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			return fmt.Errorf("scribe %s: close: %w", s.cfg.Address, err)
		}
	}
	return nil
}
