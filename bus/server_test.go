package bus

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/ardea-dev/ardea/internal/testutil"
)

// syncBuf is a logger's output read while it is written.
type syncBuf = testutil.SyncBuffer

func TestStartServerJetStreamAndLogs(t *testing.T) {
	var logs syncBuf
	s, err := StartServer(context.Background(), ServerOptions{
		Logger:    slog.New(slog.NewTextHandler(&logs, nil)),
		JetStream: true,
		StoreDir:  t.TempDir(),
		Port:      -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	if mp := nc.MaxPayload(); mp != serverMaxPayload {
		t.Errorf("max payload %d, want %d", mp, serverMaxPayload)
	}
	js, err := nc.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.AddStream(&nats.StreamConfig{Name: "T", Subjects: []string{"t.>"}}); err != nil {
		t.Fatalf("JetStream: %v", err)
	}
	if _, err := js.Publish("t.x", []byte("hi")); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	s.Shutdown()
	s.Shutdown() // twice is fine
	if !strings.Contains(logs.String(), "component=nats-server") {
		t.Errorf("no server logs through slog: %q", logs.String())
	}
	if _, err := nats.Connect(s.ClientURL()); err == nil {
		t.Error("connected after Shutdown")
	}
}

func TestStartServerErrors(t *testing.T) {
	if _, err := StartServer(context.Background(), ServerOptions{JetStream: true}); err == nil {
		t.Error("JetStream without StoreDir: no error")
	}
}

// TestNATSLoggerLevels: the server's notices are Info, warnings Warn,
// errors and fatal errors Error, debug and trace lines Debug.
func TestNATSLoggerLevels(t *testing.T) {
	var logs syncBuf
	l := natsLogger{slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	l.Noticef("n %d", 1)
	l.Warnf("w %d", 2)
	l.Errorf("e %d", 3)
	l.Fatalf("f %d", 4)
	l.Debugf("d %d", 5)
	l.Tracef("t %d", 6)
	for _, want := range []string{`level=INFO msg="n 1"`, `level=WARN msg="w 2"`, `level=ERROR msg="e 3"`,
		`level=ERROR msg="f 4" fatal=true`, `level=DEBUG msg="d 5"`, `level=DEBUG msg="t 6" trace=true`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, logs.String())
		}
	}
}

// TestWatchdogReenablesJetStream: JetStream disabled at run time (as
// nats-server does in a cluster when it runs out of space) is enabled again
// by the watchdog, its streams and their messages intact; the fault is
// logged at ERROR and cleared.
func TestWatchdogReenablesJetStream(t *testing.T) {
	var logs syncBuf
	s, err := StartServer(context.Background(), ServerOptions{
		Logger:    slog.New(slog.NewTextHandler(&logs, nil)),
		JetStream: true, StoreDir: t.TempDir(), Port: -1,
		HealInterval: 20 * time.Millisecond, HealMinFree: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := nc.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.AddStream(&nats.StreamConfig{Name: "T", Subjects: []string{"t.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish("t.x", []byte("before")); err != nil {
		t.Fatal(err)
	}
	if err := s.NATS().DisableJetStream(); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the watchdog to enable JetStream again", func() bool {
		_, err := js.Publish("t.x", []byte("after"), nats.AckWait(time.Second))
		return err == nil
	})
	m, err := js.GetMsg("T", 1)
	if err != nil {
		t.Fatalf("message 1 after the restart: %v", err)
	}
	if string(m.Data) != "before" {
		t.Fatalf("message 1 after the restart: %q", m.Data)
	}
	if s.JetStreamRestarts() == 0 {
		t.Error("no restart counted")
	}
	testutil.Eventually(t, "the fault to clear", func() bool { f, _ := s.JetStreamFault(); return f == nil })
	for _, want := range []string{`level=ERROR msg="JetStream fault`, "JetStream is disabled", "JetStream healthy again"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
}

// TestOperatorMode: with Accounts the server refuses a client without a
// user JWT, admits one of a trusted account, and a JetStream restart by the
// watchdog keeps the account's streams.
//
// Also with a resolver of a type nats-server does not know (natsauth has
// its own): a JetStream restart must not go through a reload of the
// options, which refuses such a type.
func TestOperatorMode(t *testing.T) {
	t.Run("MemAccResolver", func(t *testing.T) { operatorMode(t, &server.MemAccResolver{}) })
	t.Run("own resolver type", func(t *testing.T) { operatorMode(t, &ownResolver{}) })
}

// ownResolver is an account resolver of a type nats-server's reload does
// not know.
type ownResolver struct{ server.MemAccResolver }

func operatorMode(t *testing.T, res server.AccountResolver) {
	op, _ := nkeys.CreateOperator()
	opPub, _ := op.PublicKey()
	sys, _ := nkeys.CreateAccount()
	sysPub, _ := sys.PublicKey()
	acc, _ := nkeys.CreateAccount()
	accPub, _ := acc.PublicKey()
	oc := jwt.NewOperatorClaims(opPub)
	oc.SystemAccount = sysPub
	for _, ac := range []*jwt.AccountClaims{jwt.NewAccountClaims(sysPub), jwt.NewAccountClaims(accPub)} {
		if ac.Subject == accPub {
			ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
		}
		token, err := ac.Encode(op)
		if err != nil {
			t.Fatal(err)
		}
		if err := res.Store(ac.Subject, token); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := StartServer(t.Context(), ServerOptions{Accounts: &Accounts{Operator: oc}}); err == nil {
		t.Error("operator mode without a resolver: no error")
	}
	s, err := StartServer(t.Context(), ServerOptions{JetStream: true, StoreDir: t.TempDir(), HealInterval: -1,
		Accounts: &Accounts{Operator: oc, SystemAccount: sysPub, Resolver: res}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	if _, err := nats.Connect(s.ClientURL(), nats.NoReconnect()); !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("no credentials: %v, want %v", err, nats.ErrAuthorization)
	}
	ukp, _ := nkeys.CreateUser()
	upub, _ := ukp.PublicKey()
	seed, _ := ukp.Seed()
	token, err := jwt.NewUserClaims(upub).Encode(acc)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(s.ClientURL(), nats.UserJWTAndSeed(token, string(seed)))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := nc.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.AddStream(&nats.StreamConfig{Name: "T", Subjects: []string{"t.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish("t.x", []byte("before")); err != nil {
		t.Fatal(err)
	}
	if err := s.restartJetStream(); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the account's stream after a JetStream restart", func() bool {
		_, err := js.Publish("t.x", []byte("after"), nats.AckWait(time.Second))
		return err == nil
	})
	if m, err := js.GetMsg("T", 1); err != nil || string(m.Data) != "before" {
		t.Fatalf("message 1 after the restart: %v %v", m, err)
	}
}
