package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Embedded server limits. A data message is one batch (64 KiB by default, at
// most BatchMaxBytes plus one tuple of up to topology.max.tuple.bytes = 1 MiB),
// so 8 MiB leaves room; MaxPending bounds what the server buffers per client
// connection before it declares it a slow consumer. Credit-based flow control
// keeps the real figure far below it.
const (
	ServerMaxPayload = 8 << 20
	ServerMaxPending = 256 << 20
)

// ServerOptions configures StartServer.
type ServerOptions struct {
	// Logger receives the server's log lines (Debug/Trace at slog debug
	// level). Nil silences the server.
	Logger *slog.Logger
	// JetStream enables JetStream with its files under StoreDir.
	JetStream bool
	StoreDir  string
	// Host to listen on; default 127.0.0.1.
	Host string
	// Port to listen on; -1 or 0 picks a random free port.
	Port int
	// ReadyTimeout bounds the wait for the server to accept connections;
	// default 10s.
	ReadyTimeout time.Duration
}

// Server is an in-process NATS server.
type Server struct {
	ns *server.Server
}

// StartServer starts an embedded NATS server and waits until it accepts
// connections. It installs no signal handlers.
func StartServer(o ServerOptions) (*Server, error) {
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
	opts := &server.Options{
		Host:       host,
		Port:       port,
		NoSigs:     true,
		NoLog:      o.Logger == nil,
		MaxPayload: ServerMaxPayload,
		MaxPending: ServerMaxPending,
		JetStream:  o.JetStream,
		StoreDir:   o.StoreDir,
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("bus: embedded NATS server: %w", err)
	}
	if o.Logger != nil {
		debug := o.Logger.Enabled(context.Background(), slog.LevelDebug)
		ns.SetLoggerV2(natsLogger{o.Logger.With("component", "nats-server")}, debug, false, false)
	}
	ns.Start()
	timeout := o.ReadyTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	if !ns.ReadyForConnections(timeout) {
		ns.Shutdown()
		ns.WaitForShutdown()
		return nil, fmt.Errorf("bus: embedded NATS server on %s:%d not ready after %s", host, port, timeout)
	}
	return &Server{ns: ns}, nil
}

// ClientURL is the URL clients connect to (nats://host:port).
func (s *Server) ClientURL() string { return s.ns.ClientURL() }

// NATS returns the underlying server (for JetStream administration).
func (s *Server) NATS() *server.Server { return s.ns }

// Shutdown stops the server and waits until it has stopped. It is safe to
// call more than once.
func (s *Server) Shutdown() {
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
}

// natsLogger adapts server.Logger to slog.
type natsLogger struct{ l *slog.Logger }

func (n natsLogger) Noticef(f string, v ...any) { n.l.Info(fmt.Sprintf(f, v...)) }
func (n natsLogger) Warnf(f string, v ...any)   { n.l.Warn(fmt.Sprintf(f, v...)) }
func (n natsLogger) Fatalf(f string, v ...any)  { n.l.Error(fmt.Sprintf(f, v...), "fatal", true) }
func (n natsLogger) Errorf(f string, v ...any)  { n.l.Error(fmt.Sprintf(f, v...)) }
func (n natsLogger) Debugf(f string, v ...any)  { n.l.Debug(fmt.Sprintf(f, v...)) }
func (n natsLogger) Tracef(f string, v ...any)  { n.l.Debug(fmt.Sprintf(f, v...), "trace", true) }
