package sinks

import (
	"errors"
	"fmt"
	"net"
	"sync"
)

// ScribeEntry is one entry a Scribe server received.
type ScribeEntry struct{ Category, Message string }

// ServeScribe runs a Scribe server (the Log call over a framed transport,
// binary protocol) on addr ("127.0.0.1:0" picks a port) until stop is
// called; bound is the address it listens on. onLog hears each call's
// entries, one call at a time per connection, and answers whether they
// were taken (false: TRY_LATER). A call of another method is answered
// with Thrift's UNKNOWN_METHOD exception; a frame over 16,384,000 bytes
// or one that does not decode closes its connection. stop closes the
// listener and the connections still open and returns once the server's
// goroutines are done. `ardea bench` uses it as a local receiver.
func ServeScribe(addr string, onLog func([]ScribeEntry) bool) (stop func(), bound string, err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("scribe server %s: %w", addr, err)
	}
	srv := &scribeServer{ln: ln, onLog: onLog, conns: map[net.Conn]struct{}{}}
	srv.wg.Add(1)
	go srv.accept()
	var once sync.Once
	return func() { once.Do(srv.stop) }, ln.Addr().String(), nil
}

// scribeServer owns the accept loop and one goroutine per connection; wg
// waits for all of them.
type scribeServer struct {
	ln    net.Listener
	onLog func([]ScribeEntry) bool
	wg    sync.WaitGroup

	mu      sync.Mutex // guards conns and stopped
	conns   map[net.Conn]struct{}
	stopped bool
}

func (s *scribeServer) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return // closed by stop
		}
		s.mu.Lock()
		if s.stopped {
			s.mu.Unlock()
			_ = c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(c)
	}
}

// serve answers the calls on c until it fails or closes.
func (s *scribeServer) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		_ = c.Close()
	}()
	var buf, out []byte
	for {
		msg, err := readScribeFrame(c, buf, scribeMaxCallFrame)
		buf = msg
		if err != nil {
			return
		}
		seq, es, err := parseScribeLogCall(msg)
		var um *unknownMethodError
		switch {
		case errors.As(err, &um):
			out = appendThriftException(out[:0], um.name, seq, thriftUnknownMeth, err.Error())
		case err != nil:
			return
		default:
			rc := scribeOK
			if !s.onLog(es) {
				rc = scribeTryLater
			}
			out = appendScribeLogReply(out[:0], seq, rc)
		}
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

func (s *scribeServer) stop() {
	s.mu.Lock()
	s.stopped = true
	conns := s.conns
	s.conns = map[net.Conn]struct{}{}
	s.mu.Unlock()
	_ = s.ln.Close()
	for c := range conns {
		_ = c.Close()
	}
	s.wg.Wait()
}
