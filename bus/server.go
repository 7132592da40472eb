package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
)

// Embedded server limits. A data message is one batch (64 KiB by default, at
// most BatchMaxBytes plus one tuple of up to topology.max.tuple.bytes = 1 MiB),
// so 8 MiB leaves room; MaxPending bounds what the server buffers per client
// connection before it declares it a slow consumer. Credit-based flow control
// keeps the real figure far below it.
const (
	serverMaxPayload = 8 << 20
	serverMaxPending = 256 << 20
)

// JetStream watchdog defaults (ServerOptions.HealInterval, HealMinFree).
const (
	defaultHealInterval = time.Second
	defaultHealMinFree  = 16 << 20
	// healMaxBackoff bounds the wait between two restarts of JetStream
	// that did not clear the fault.
	healMaxBackoff = 30 * time.Second
	// defaultHealProbeTimeout bounds one health check or JetStream
	// restart of the watchdog (ServerOptions.HealProbeTimeout).
	defaultHealProbeTimeout = 30 * time.Second
)

// ServerOptions configures StartServer.
type ServerOptions struct {
	// Logger receives the server's log lines (Debug/Trace at slog debug
	// level) and the JetStream watchdog's. Nil silences the server.
	Logger *slog.Logger
	// JetStream enables JetStream with its files under StoreDir.
	JetStream bool
	StoreDir  string
	// MaxStore limits JetStream's file storage (bytes); 0: nats-server's
	// default, 75% of the space free on StoreDir's file system when it
	// starts, plus what it holds.
	MaxStore int64
	// Host to listen on; default 127.0.0.1.
	Host string
	// Port to listen on; -1 or 0 picks a random free port.
	Port int
	// ReadyTimeout bounds the wait for the server to accept connections;
	// default 10s.
	ReadyTimeout time.Duration
	// HealInterval is how often the JetStream watchdog checks the server
	// (see Server); default defaultHealInterval, negative: no watchdog.
	HealInterval time.Duration
	// HealMinFree is the free space (bytes) StoreDir's file system needs
	// before the watchdog restarts a faulty JetStream; default
	// defaultHealMinFree.
	HealMinFree int64
	// HealProbeTimeout bounds each of the watchdog's health checks and
	// JetStream restarts; one that has not returned by then means
	// JetStream is wedged (see Server.Wedged). Default
	// defaultHealProbeTimeout.
	HealProbeTimeout time.Duration
	// Accounts runs the server in operator mode: every client must present
	// a user JWT signed by an account the operator signed, and lands in that
	// account (its subjects, its JetStream). Nil: no authentication and one
	// account for every client (`ardea run`, tests). internal/natsauth
	// builds it.
	Accounts *Accounts
	// Cluster joins a NATS cluster of Ardea nodes (nil: a server of its
	// own). See Cluster.
	Cluster *Cluster
}

// Accounts is the operator mode of ServerOptions.
type Accounts struct {
	// Operator is the trusted operator's (self-signed) claims.
	Operator *jwt.OperatorClaims
	// SystemAccount is the system account's public key; its JWT must be
	// in Resolver before the server starts.
	SystemAccount string
	// Resolver holds the account JWTs by public key. Its owner adds
	// accounts at run time (a new account is fetched at its first
	// connection) and pushes updates (limits, revocations) to the running
	// server with UpdateAccountClaims.
	Resolver server.AccountResolver
}

// Server is an in-process NATS server.
//
// With JetStream, a watchdog goroutine heals the faults that nats-server
// does not recover from by itself. A write error in a stream's files (most
// often "no space left on device") makes a standalone nats-server refuse
// every later write to that stream, without replying to the publisher, until
// the stream is loaded again; in a cluster it disables JetStream
// altogether. Every HealInterval the watchdog asks the server's health check
// for streams with a write error and whether JetStream is enabled; on a fault
// it logs an error, and once StoreDir's file system has HealMinFree bytes
// free it restarts JetStream (every stream is loaded again from its files,
// which drops a record cut short by the failed write), backing off from 1 s
// to 30 s while that does not help. JetStreamFault reports the current
// fault.
//
// A fault the watchdog cannot heal is a JetStream that no longer answers:
// nats-server's file store can deadlock on itself (a purge whose tombstone
// cannot be written on a full disk rebuilds the store's state under the
// lock the purge holds, docs/reliability.md "JetStream wedged"). Every
// request on that stream then blocks for ever, and so does the server's
// health check. The watchdog bounds each health check and restart by
// HealProbeTimeout; one that has not returned by then marks the server
// wedged (Wedged, WedgedErr) and ends the watchdog. Only a new process
// recovers from that: its owner stops (an `ardea local` exits with the
// error) and the next start loads the streams from their files.
//
// Goroutines: the watchdog (Shutdown waits for it) and, per check, a
// probe it waits for up to HealProbeTimeout. A probe stuck in a wedged
// server never returns and is left behind: nothing can wait for it.
type Server struct {
	ns      *server.Server
	opts    *server.Options // as started, cloned for a JetStream restart
	log     *slog.Logger
	minFree int64
	probeT  time.Duration
	stop    chan struct{}
	done    chan struct{} // closed when the watchdog returned (nil: none)
	once    sync.Once
	wedged  chan struct{} // closed when JetStream is found wedged

	mu        sync.Mutex
	fault     error
	faultAt   time.Time
	restarts  int
	wedgedErr error
}

// StartServer starts an embedded NATS server and waits until it accepts
// connections. It installs no signal handlers. ctx carries the values the
// logger's handler reads; the server runs until Shutdown, not until ctx ends.
func StartServer(ctx context.Context, o ServerOptions) (*Server, error) {
	port := o.Port
	if port == 0 {
		port = -1
	}
	host := o.Host
	if host == "" {
		host = "127.0.0.1"
	}
	if o.JetStream && o.StoreDir == "" {
		return nil, errors.New("bus: embedded NATS server: JetStream needs a StoreDir")
	}
	if a := o.Accounts; a != nil && (a.Operator == nil || a.SystemAccount == "" || a.Resolver == nil) {
		return nil, errors.New("bus: embedded NATS server: operator mode needs the operator, the system account and a resolver")
	}
	opts := &server.Options{
		Host:       host,
		Port:       port,
		NoSigs:     true,
		NoLog:      o.Logger == nil,
		MaxPayload: serverMaxPayload,
		MaxPending: serverMaxPending,
		JetStream:  o.JetStream,
		StoreDir:   o.StoreDir,
		// JetStreamMaxStore 0 is nats-server's default (its share of the
		// free disk); restartJetStream passes it again.
		JetStreamMaxStore: o.MaxStore,
		// The banner is a dozen lines of ASCII art at every (re)start.
		DisableJetStreamBanner: true,
	}
	if a := o.Accounts; a != nil {
		opts.TrustedOperators = []*jwt.OperatorClaims{a.Operator}
		opts.SystemAccount = a.SystemAccount
		opts.AccountResolver = a.Resolver
	}
	if o.Cluster != nil {
		if err := o.Cluster.apply(opts); err != nil {
			return nil, err
		}
	}
	started := opts.Clone()
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("bus: embedded NATS server: %w", err)
	}
	log := o.Logger
	if log != nil {
		log = log.With("component", "nats-server")
		debug := log.Enabled(ctx, slog.LevelDebug)
		ns.SetLoggerV2(natsLogger{log}, debug, false, false)
	} else {
		log = slog.New(slog.DiscardHandler)
	}
	ns.Start()
	timeout := o.ReadyTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	if !ns.ReadyForConnections(timeout) {
		// Which listener is missing (a port taken by another process
		// keeps it from ever opening).
		var missing []string
		if ns.Addr() == nil {
			missing = append(missing, fmt.Sprintf("clients on %s:%d", host, port))
		}
		if started.Cluster.Port != 0 && ns.ClusterAddr() == nil {
			missing = append(missing, fmt.Sprintf("routes on %s:%d", started.Cluster.Host, started.Cluster.Port))
		}
		ns.Shutdown()
		ns.WaitForShutdown()
		return nil, fmt.Errorf("bus: embedded NATS server on %s:%d not ready after %s (not listening: %s)", host, port, timeout, strings.Join(missing, ", "))
	}
	s := &Server{ns: ns, opts: started, log: log, minFree: o.HealMinFree, probeT: o.HealProbeTimeout,
		stop: make(chan struct{}), wedged: make(chan struct{})}
	if s.minFree <= 0 {
		s.minFree = defaultHealMinFree
	}
	if s.probeT <= 0 {
		s.probeT = defaultHealProbeTimeout
	}
	if o.JetStream && o.HealInterval >= 0 {
		every := o.HealInterval
		if every == 0 {
			every = defaultHealInterval
		}
		s.done = make(chan struct{})
		go s.watch(every)
	}
	return s, nil
}

// ClientURL is the URL clients connect to (nats://host:port).
func (s *Server) ClientURL() string { return s.ns.ClientURL() }

// NATS returns the underlying server (for JetStream administration).
func (s *Server) NATS() *server.Server { return s.ns }

// Shutdown stops the watchdog and the server and waits until both have
// stopped. It is safe to call more than once. A wedged server (Wedged)
// may never stop: Shutdown then waits for it at most HealProbeTimeout and
// leaves it behind (the process must exit to be rid of it).
func (s *Server) Shutdown() {
	s.once.Do(func() { close(s.stop) })
	if s.done != nil {
		<-s.done
	}
	if s.WedgedErr() == nil {
		s.ns.Shutdown()
		s.ns.WaitForShutdown()
		return
	}
	stopped := make(chan struct{})
	go func() {
		s.ns.Shutdown()
		s.ns.WaitForShutdown()
		close(stopped)
	}()
	t := time.NewTimer(s.probeT)
	defer t.Stop()
	select {
	case <-stopped:
	case <-t.C:
		s.log.Error("JetStream wedged: the embedded NATS server did not shut down; it is left behind", "after", s.probeT)
	}
}

// LowOnSpace returns why the JetStream store should not be asked to
// delete now: its file system has less than HealMinFree bytes free
// (nil when it has more, or cannot tell, or without JetStream). A delete
// purges, and nats-server can deadlock on a purge it cannot record on a
// full disk (see Server); what waits for space loses nothing.
func (s *Server) LowOnSpace() error {
	if !s.opts.JetStream {
		return nil
	}
	if free, ok := freeBytes(s.opts.StoreDir); ok && free < uint64(s.minFree) {
		return fmt.Errorf("bus: the JetStream store %s has %d bytes free, below %d", s.opts.StoreDir, free, s.minFree)
	}
	return nil
}

// Wedged is closed once the watchdog found JetStream wedged: a health
// check or a restart of JetStream did not return within HealProbeTimeout
// (see Server). Nothing in this process recovers it; WedgedErr says what
// was found.
func (s *Server) Wedged() <-chan struct{} { return s.wedged }

// WedgedErr is the error that wedged JetStream (nil while it is not).
func (s *Server) WedgedErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.wedgedErr
}

// JetStreamFault returns the JetStream fault the watchdog is healing (nil
// when JetStream is healthy) and when it was first seen; once JetStream
// is wedged, that error.
func (s *Server) JetStreamFault() (error, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fault, s.faultAt
}

// JetStreamRestarts counts the watchdog's restarts of JetStream.
func (s *Server) JetStreamRestarts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restarts
}

// watch is the JetStream watchdog (see Server); Shutdown waits for it.
func (s *Server) watch(every time.Duration) {
	defer close(s.done)
	t := time.NewTicker(every)
	defer t.Stop()
	backoff := time.Second
	var next, waitLogged time.Time
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		problem, ok := bounded(s.probeT, s.jetStreamProblem)
		if !ok {
			s.setWedged(fmt.Errorf("bus: JetStream wedged: its health check has not returned in %s (nats-server's store deadlocked; only a new process recovers)", s.probeT))
			return
		}
		s.mu.Lock()
		had, since := s.fault, s.faultAt
		if problem == nil {
			s.fault = nil
		} else if had == nil {
			s.fault, s.faultAt = problem, time.Now()
		}
		s.mu.Unlock()
		if problem == nil {
			if had != nil {
				s.log.Info("JetStream healthy again", "fault", had.Error(), "after", time.Since(since).Round(time.Millisecond))
			}
			backoff, next = time.Second, time.Time{}
			continue
		}
		if had == nil {
			s.log.Error("JetStream fault: writes to the affected streams fail until it is healed; JetStream is restarted once the store has space",
				"err", problem.Error(), "store_dir", s.opts.StoreDir, "min_free", s.minFree)
		}
		if time.Now().Before(next) {
			continue
		}
		if free, ok := freeBytes(s.opts.StoreDir); ok && free < uint64(s.minFree) {
			if time.Since(waitLogged) >= 30*time.Second {
				s.log.Warn("JetStream fault: waiting for free space before restarting JetStream",
					"err", problem.Error(), "store_dir", s.opts.StoreDir, "free", free, "min_free", s.minFree)
				waitLogged = time.Now()
			}
			continue
		}
		select {
		case <-s.stop:
			return
		default:
		}
		s.log.Warn("restarting JetStream to clear a fault", "err", problem.Error())
		err, ok := bounded(s.probeT, s.restartJetStream)
		if !ok {
			s.setWedged(fmt.Errorf("bus: JetStream wedged: restarting it to clear %q has not returned in %s (only a new process recovers)", problem.Error(), s.probeT))
			return
		}
		s.mu.Lock()
		s.restarts++
		s.mu.Unlock()
		if err != nil {
			s.log.Error("JetStream restart failed", "err", err)
		}
		next = time.Now().Add(backoff)
		backoff = min(2*backoff, healMaxBackoff)
	}
}

// setWedged records that JetStream is wedged (its fault from now on) and
// closes Wedged.
func (s *Server) setWedged(err error) {
	s.mu.Lock()
	s.wedgedErr = err
	if s.fault == nil {
		s.faultAt = time.Now()
	}
	s.fault = err
	s.mu.Unlock()
	s.log.Error("JetStream wedged: every request on the affected stream blocks; stop this process, a new one loads the streams from their files",
		"err", err.Error(), "store_dir", s.opts.StoreDir)
	close(s.wedged)
}

// bounded runs f on a goroutine of its own and waits at most d for it;
// ok is false when f has not returned by then. The goroutine is left to
// finish (or, in a deadlocked server, to block for ever): its result has
// room in the channel, so it never blocks on sending it.
func bounded[T any](d time.Duration, f func() T) (v T, ok bool) {
	ch := make(chan T, 1)
	go func() { ch <- f() }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case v = <-ch:
		return v, true
	case <-t.C:
		return v, false
	}
}

// jetStreamProblem returns what keeps JetStream from storing, or nil.
func (s *Server) jetStreamProblem() error {
	if !s.ns.JetStreamEnabled() {
		return errors.New("JetStream is disabled")
	}
	hs := s.ns.Healthz(&server.HealthzOptions{Details: true})
	var errs []error
	for _, e := range hs.Errors {
		if e.Type == server.HealthzErrorStream && strings.Contains(e.Error, "write error") {
			errs = append(errs, errors.New(e.Error))
		}
	}
	return errors.Join(errs...)
}

// restartJetStream shuts JetStream down and enables it again with the
// options the server started with: every stream is loaded again from its
// files.
func (s *Server) restartJetStream() error {
	if s.ns.JetStreamEnabled() {
		if err := s.ns.ShutdownJetStream(); err != nil {
			return fmt.Errorf("bus: shut JetStream down: %w", err)
		}
	}
	// EnableJetStream with the options the server started with, not a
	// reload of them: a reload refuses an account resolver of a type it
	// does not know (natsauth's own: see its resolver.go).
	if err := s.ns.EnableJetStream(&server.JetStreamConfig{StoreDir: s.opts.StoreDir,
		MaxMemory: s.opts.JetStreamMaxMemory, MaxStore: s.opts.JetStreamMaxStore}); err != nil {
		return fmt.Errorf("bus: enable JetStream again: %w", err)
	}
	if !s.ns.JetStreamEnabled() {
		return errors.New("bus: JetStream still disabled after a restart")
	}
	return nil
}

// natsLogger adapts server.Logger to slog: notices are Info, warnings Warn,
// errors and fatal errors Error, debug and trace lines Debug.
type natsLogger struct{ l *slog.Logger }

func (n natsLogger) Noticef(f string, v ...any) { n.l.Info(fmt.Sprintf(f, v...)) }
func (n natsLogger) Warnf(f string, v ...any)   { n.l.Warn(fmt.Sprintf(f, v...)) }
func (n natsLogger) Fatalf(f string, v ...any)  { n.l.Error(fmt.Sprintf(f, v...), "fatal", true) }
func (n natsLogger) Errorf(f string, v ...any)  { n.l.Error(fmt.Sprintf(f, v...)) }
func (n natsLogger) Debugf(f string, v ...any)  { n.l.Debug(fmt.Sprintf(f, v...)) }
func (n natsLogger) Tracef(f string, v ...any)  { n.l.Debug(fmt.Sprintf(f, v...), "trace", true) }
