package natsauth

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/internal/names"
	"github.com/ardea-dev/ardea/internal/testutil"
)

// env is an embedded server in operator mode with tenants A and B.
type env struct {
	m        *Manager
	srv      *bus.Server
	authDir  string
	storeDir string
}

func start(t *testing.T) *env {
	t.Helper()
	e := &env{authDir: filepath.Join(t.TempDir(), "auth"), storeDir: t.TempDir()}
	m, err := Open(e.authDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tn := range []string{"A", "B"} {
		if err := m.AddTenant(tn, Limits{}); err != nil {
			t.Fatal(err)
		}
	}
	e.m = m
	e.startServer(t)
	return e
}

func (e *env) startServer(t *testing.T) {
	t.Helper()
	srv, err := bus.StartServer(t.Context(), bus.ServerOptions{JetStream: true, StoreDir: e.storeDir,
		HealInterval: -1, Accounts: e.m.ServerAccounts()})
	if err != nil {
		t.Fatal(err)
	}
	e.m.Attach(srv.NATS())
	e.srv = srv
	t.Cleanup(srv.Shutdown)
}

func (e *env) connect(t *testing.T, c Creds, extra ...nats.Option) *nats.Conn {
	t.Helper()
	// A silent error handler: the tests read the errors from LastError.
	quiet := nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {})
	nc, err := nats.Connect(e.srv.ClientURL(), append(append(c.Options(), nats.NoReconnect(), quiet), extra...)...)
	if err != nil {
		t.Fatalf("connect as %s: %v", c.User, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func (e *env) daemon(t *testing.T, tenant string) *nats.Conn {
	t.Helper()
	c, err := e.m.DaemonCreds(tenant)
	if err != nil {
		t.Fatal(err)
	}
	return e.connect(t, c)
}

func (e *env) host(t *testing.T, tenant, topology string) (*nats.Conn, Creds) {
	t.Helper()
	c, err := e.m.HostCreds(tenant, topology, TenantIO{})
	if err != nil {
		t.Fatal(err)
	}
	return e.connect(t, c), c
}

// denied runs op on nc and checks the server's answer: after a round trip
// (the server sends its -ERR before the PONG), the connection's last error
// is the permissions violation naming what and subject.
func denied(t *testing.T, nc *nats.Conn, what, subject string, op func() error) {
	t.Helper()
	if err := op(); err != nil {
		t.Fatalf("%s %s: %v", what, subject, err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatalf("%s %s: flush: %v", what, subject, err)
	}
	want := `Permissions Violation for ` + what + ` to "` + subject + `"`
	if err := nc.LastError(); err == nil || !errors.Is(err, nats.ErrPermissionViolation) || !strings.Contains(err.Error(), want) {
		t.Fatalf("%s %s: last error %v, want %q", what, subject, err, want)
	}
	if !nc.IsConnected() {
		t.Fatalf("%s %s: connection closed", what, subject)
	}
}

// allowed checks that op raised no error at the server.
func allowed(t *testing.T, nc *nats.Conn, what, subject string, op func() error) {
	t.Helper()
	before := nc.LastError()
	if err := op(); err != nil {
		t.Fatalf("%s %s: %v", what, subject, err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatalf("%s %s: flush: %v", what, subject, err)
	}
	if err := nc.LastError(); err != nil && err != before {
		t.Fatalf("%s %s: %v", what, subject, err)
	}
}

func authRefused(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: connected, want an authorization violation", what)
	}
	if !errors.Is(err, nats.ErrAuthorization) && !strings.Contains(strings.ToLower(err.Error()), "authorization violation") {
		t.Fatalf("%s: %v, want an authorization violation", what, err)
	}
}

func TestNoCredentialsRefusedAtConnect(t *testing.T) {
	e := start(t)
	_, err := nats.Connect(e.srv.ClientURL(), nats.NoReconnect())
	authRefused(t, "no credentials", err)
	_, err = nats.Connect(e.srv.ClientURL(), nats.NoReconnect(), nats.UserInfo("ardea", "ardea"))
	authRefused(t, "user and password", err)
	_, err = nats.Connect(e.srv.ClientURL(), nats.NoReconnect(), nats.Token("secret"))
	authRefused(t, "token", err)
	// The daemon's in-process connection authenticates with its credential.
	dc, err := e.m.DaemonCreds("A")
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(e.srv.ClientURL(), append(dc.Options(), nats.InProcessServer(e.srv.NATS()))...)
	if err != nil {
		t.Fatalf("in process, the daemon's credential: %v", err)
	}
	nc.Close()
}

func TestHostSubscribeFenced(t *testing.T) {
	e := start(t)
	nc, _ := e.host(t, "A", "wc")
	for _, s := range []string{">", "ardea.>", "ardea.B.>", "ardea.B.wc.data.1", "ardea.A.other.>", "ardea.A.*.ctl.cmd",
		"$SYS.>", "$SYS.ACCOUNT.>", "_INBOX.>", "_INBOX_other.>", "$JS.API.>", "$KV.>", "$O.>"} {
		denied(t, nc, "Subscription", s, func() error { _, err := nc.SubscribeSync(s); return err })
	}
	// Its own subjects work end to end.
	sub, err := nc.SubscribeSync(names.Subject("A", "wc", "data", "1"))
	if err != nil {
		t.Fatal(err)
	}
	allowed(t, nc, "Publish", "ardea.A.wc.data.1", func() error { return nc.Publish("ardea.A.wc.data.1", []byte("x")) })
	if m, err := sub.NextMsg(10 * time.Second); err != nil || string(m.Data) != "x" {
		t.Fatalf("own data subject: %v %v", m, err)
	}
}

func TestHostPublishFenced(t *testing.T) {
	e := start(t)
	b := e.daemon(t, "B")
	data, ctlCmd := names.Subject("B", "wc", "data", "1"), names.Subject("B", "wc", "ctl", "cmd")
	subs := map[string]*nats.Subscription{}
	for _, s := range []string{data, ctlCmd} {
		sub, err := b.SubscribeSync(s)
		if err != nil {
			t.Fatal(err)
		}
		subs[s] = sub
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	a, _ := e.host(t, "A", "wc")
	for _, s := range []string{data, ctlCmd, "ardea.A.other.data.1", "ardea.A.other.ctl.cmd", "$SYS.REQ.SERVER.PING",
		"$SYS.REQ.ACCOUNT.PING.CONNZ", "$KV.ardea_B_topologies.wc", "$KV.ardea_A_topologies.wc", "$KV.ardea_A_plans.wc.physical",
		"$O.ardea_A_artifacts.C.x", "_INBOX.x"} {
		denied(t, a, "Publish", s, func() error { return a.Publish(s, []byte("forged")) })
	}
	// A's daemon has every permission in A's account, and still cannot
	// reach B: another account is another subject space.
	ad := e.daemon(t, "A")
	for _, s := range []string{data, ctlCmd} {
		allowed(t, ad, "Publish", s, func() error { return ad.Publish(s, []byte("forged")) })
	}
	// B's subscribers got nothing: B's own marker, published after the
	// server answered A's attempts, is the first message each sees.
	for s, sub := range subs {
		if err := b.Publish(s, []byte("marker")); err != nil {
			t.Fatal(err)
		}
		m, err := sub.NextMsg(10 * time.Second)
		if err != nil || string(m.Data) != "marker" {
			t.Fatalf("%s: first message %v (%v), want B's marker", s, m, err)
		}
	}
}

func TestHostReplyToControlRequest(t *testing.T) {
	// The daemon's control request reaches the host and the host's reply
	// reaches the daemon's inbox (a response permission).
	e := start(t)
	h, _ := e.host(t, "A", "wc")
	subj := names.Subject("A", "wc", "ctl", "cmd")
	sub, err := h.Subscribe(subj, func(m *nats.Msg) { _ = m.Respond([]byte("ok")) })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := h.Flush(); err != nil {
		t.Fatal(err)
	}
	d := e.daemon(t, "A")
	m, err := d.Request(subj, []byte("activate"), 10*time.Second)
	if err != nil || string(m.Data) != "ok" {
		t.Fatalf("request: %v %v", m, err)
	}
	if err := h.LastError(); err != nil {
		t.Fatalf("host: %v", err)
	}
}

func TestHostJetStreamFenced(t *testing.T) {
	e := start(t)
	ctx := t.Context()
	// B's daemon makes B's buckets and a stream under B's bucket name.
	bjs, err := jetstream.New(e.daemon(t, "B"))
	if err != nil {
		t.Fatal(err)
	}
	bkv, err := bjs.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "ardea_B_topologies"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bkv.Put(ctx, "wc", []byte("B's topology")); err != nil {
		t.Fatal(err)
	}
	bInfo, err := bjs.Stream(ctx, "KV_ardea_B_topologies")
	if err != nil {
		t.Fatal(err)
	}
	bCreated := bInfo.CachedInfo().Created

	a, _ := e.host(t, "A", "wc")
	inbox := a.NewInbox()
	if !strings.HasPrefix(inbox, "_INBOX_wc.") {
		t.Fatalf("host inbox %s", inbox)
	}
	req := func(s string) func() error { return func() error { return a.PublishRequest(s, inbox, []byte("{}")) } }
	for _, s := range []string{
		// B's JetStream API: not in the permissions, and not in A's account.
		"$JS.API.INFO",
		"$JS.API.STREAM.INFO.KV_ardea_B_topologies",
		"$JS.API.STREAM.CREATE.KV_ardea_B_topologies",
		"$JS.API.STREAM.UPDATE.KV_ardea_B_topologies",
		"$JS.API.STREAM.PURGE.KV_ardea_B_topologies",
		"$JS.API.STREAM.DELETE.KV_ardea_B_topologies",
		"$JS.API.STREAM.RESTORE.KV_ardea_B_topologies",
		"$JS.API.STREAM.SNAPSHOT.KV_ardea_B_topologies",
		"$JS.API.STREAM.MSG.GET.KV_ardea_B_topologies",
		"$JS.API.DIRECT.GET.KV_ardea_B_topologies.$KV.ardea_B_topologies.wc",
		"$JS.API.CONSUMER.CREATE.KV_ardea_B_plans.x.$KV.ardea_B_plans.wc.physical",
		"$JS.API.STREAM.NAMES",
		"$JS.API.STREAM.LIST",
		// Its own tenant's buckets: only the daemon manages them, and
		// another topology's keys are out of reach.
		"$JS.API.STREAM.CREATE.KV_ardea_A_topologies",
		"$JS.API.STREAM.UPDATE.KV_ardea_A_plans",
		"$JS.API.STREAM.DELETE.KV_ardea_A_plans",
		"$JS.API.STREAM.PURGE.KV_ardea_A_topologies",
		"$JS.API.STREAM.PURGE.OBJ_ardea_A_artifacts",
		"$JS.API.CONSUMER.CREATE.OBJ_ardea_A_artifacts.x",
		"$JS.API.CONSUMER.CREATE.OBJ_ardea_A_handoff.x.$O.ardea_A_handoff.M.*",
		"$JS.API.CONSUMER.DURABLE.CREATE.KV_ardea_A_plans.x",
		"$JS.API.CONSUMER.DELETE.KV_ardea_A_topologies.x",
		"$JS.API.DIRECT.GET.KV_ardea_A_topologies",
		"$JS.API.STREAM.RESTORE.KV_ardea_A_topologies",
		"$JS.API.STREAM.CREATE.evil",
		"$JS.API.DIRECT.GET.KV_ardea_A_topologies.$KV.ardea_A_topologies.other",
		"$JS.API.DIRECT.GET.KV_ardea_A_plans.$KV.ardea_A_plans.other.physical",
		"$JS.API.CONSUMER.CREATE.KV_ardea_A_plans.x.$KV.ardea_A_plans.other.physical",
		"$JS.API.CONSUMER.CREATE.KV_ardea_A_plans.x",
		"$JS.API.CONSUMER.CREATE.KV_ardea_A_state.x.$KV.ardea_A_state.wc",
	} {
		denied(t, a, "Publish", s, req(s))
	}

	// With every permission in A's account (A's daemon), B's streams
	// still do not exist there: the JetStream API answers in A's account.
	ajs, err := jetstream.New(e.daemon(t, "A"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ajs.Stream(ctx, "KV_ardea_B_topologies"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("A: stream info of B's bucket: %v, want stream not found", err)
	}
	if err := ajs.DeleteStream(ctx, "KV_ardea_B_topologies"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("A: delete B's bucket: %v, want stream not found", err)
	}
	// A stream of the same name in A's account is A's own.
	as, err := ajs.CreateStream(ctx, jetstream.StreamConfig{Name: "KV_ardea_B_topologies", Subjects: []string{"$KV.ardea_B_topologies.>"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := as.Purge(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ajs.DeleteStream(ctx, "KV_ardea_B_topologies"); err != nil {
		t.Fatal(err)
	}
	bInfo, err = bjs.Stream(ctx, "KV_ardea_B_topologies")
	if err != nil {
		t.Fatalf("B's bucket after A's create, purge and delete: %v", err)
	}
	if got := bInfo.CachedInfo(); !got.Created.Equal(bCreated) || got.State.Msgs != 1 {
		t.Fatalf("B's bucket changed: created %v (was %v), %d messages", got.Created, bCreated, got.State.Msgs)
	}
	if v, err := bkv.Get(ctx, "wc"); err != nil || string(v.Value()) != "B's topology" {
		t.Fatalf("B's key: %v %v", v, err)
	}
}

func TestSwitchingAccountRefused(t *testing.T) {
	e := start(t)
	url := e.srv.ClientURL()
	aKey, bKey := e.m.tenants["A"], e.m.tenants["B"]
	bPub, _ := bKey.PublicKey()
	user := func() (nkeys.KeyPair, *jwt.UserClaims) {
		ukp, _ := nkeys.CreateUser()
		pub, _ := ukp.PublicKey()
		return ukp, jwt.NewUserClaims(pub)
	}
	connectAs := func(token string, ukp nkeys.KeyPair) error {
		seed, _ := ukp.Seed()
		nc, err := nats.Connect(url, nats.NoReconnect(), nats.UserJWTAndSeed(token, string(seed)))
		if err == nil {
			nc.Close()
		}
		return err
	}

	// A's account signs a user that names B as its issuer account.
	ukp, uc := user()
	uc.IssuerAccount = bPub
	token, err := uc.Encode(aKey)
	if err != nil {
		t.Fatal(err)
	}
	authRefused(t, "user signed by A naming B's account", connectAs(token, ukp))

	// A user signed by a key the operator never signed.
	rogue, _ := nkeys.CreateAccount()
	ukp, uc = user()
	token, _ = uc.Encode(rogue)
	authRefused(t, "user signed by an unknown account", connectAs(token, ukp))

	// A rogue account JWT signed by a rogue operator does not help either
	// (the server only fetches accounts from its resolver).
	ukp, uc = user()
	rpub, _ := rogue.PublicKey()
	uc.IssuerAccount = rpub
	token, _ = uc.Encode(rogue)
	authRefused(t, "user of a rogue account", connectAs(token, ukp))

	// A's host JWT with its permissions widened: the signature no longer
	// matches.
	hc, err := e.m.HostCreds("A", "wc", TenantIO{})
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(hc.JWT, ".")
	claims, err := jwt.DecodeUserClaims(hc.JWT)
	if err != nil {
		t.Fatal(err)
	}
	claims.Permissions = jwt.Permissions{}
	wide, _ := claims.Encode(aKey) // a validly signed JWT, to take its payload
	forged := parts[0] + "." + strings.Split(wide, ".")[1] + "." + parts[2]
	hkp, _ := nkeys.FromSeed([]byte(hc.Seed))
	authRefused(t, "host JWT with a forged payload", connectAs(forged, hkp))
	// Its payload edited to name B's account as issuer, A's signature kept.
	payload := strings.Replace(mustDecode(t, parts[1]), claims.Issuer, bPub, 1)
	edited := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(payload)) + "." + parts[2]
	authRefused(t, "host JWT with B's account as issuer", connectAs(edited, hkp))

	// A's JWT presented without its seed (another key signs the nonce).
	other, _ := nkeys.CreateUser()
	authRefused(t, "A's JWT with another seed", connectAs(hc.JWT, other))

	// A self-signed user.
	ukp, uc = user()
	token, _ = uc.Encode(ukp)
	authRefused(t, "self-signed user", connectAs(token, ukp))

	// The genuine credential connects.
	if err := connectAs(hc.JWT, hkp); err != nil {
		t.Fatalf("genuine host credential: %v", err)
	}
}

// recv waits for the server's answer on ch; the bound only keeps a broken
// server from hanging the test.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Minute):
		t.Fatalf("no %s within a minute", what)
		panic("unreachable")
	}
}

func mustDecode(t *testing.T, s string) string {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRevokeHost(t *testing.T) {
	e := start(t)
	closed := make(chan struct{})
	errs := make(chan error, 8)
	hc, err := e.m.HostCreds("A", "wc", TenantIO{})
	if err != nil {
		t.Fatal(err)
	}
	h := e.connect(t, hc, nats.ClosedHandler(func(*nats.Conn) { close(closed) }),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err }))
	other, _ := e.host(t, "A", "other")
	bHost, _ := e.host(t, "B", "wc")
	if err := e.m.RevokeHost("A", "wc"); err != nil {
		t.Fatal(err)
	}
	// The server's answer, then it closes the connection.
	if err := recv(t, errs, "the revoked host's error"); !errors.Is(err, nats.ErrAuthRevoked) {
		t.Fatalf("revoked host: %v, want %v", err, nats.ErrAuthRevoked)
	}
	recv(t, closed, "the revoked host's connection to close")
	if h.IsConnected() {
		t.Fatal("revoked host still connected")
	}
	_, err = nats.Connect(e.srv.ClientURL(), append(hc.Options(), nats.NoReconnect())...)
	authRefused(t, "revoked credential", err)
	// Other topologies and tenants keep their connections; a credential
	// issued after the revocation works.
	for _, nc := range []*nats.Conn{other, bHost} {
		if err := nc.Flush(); err != nil {
			t.Fatalf("%v after A/wc's revocation: %v", nc.Opts.User, err)
		}
	}
	e.host(t, "A", "wc")

	// The revocation survives a restart of the daemon (its state file).
	e.srv.Shutdown()
	m, err := Open(e.authDir)
	if err != nil {
		t.Fatal(err)
	}
	e.m = m
	e.startServer(t)
	_, err = nats.Connect(e.srv.ClientURL(), append(hc.Options(), nats.NoReconnect())...)
	authRefused(t, "revoked credential after a restart", err)
}

func TestJetStreamLimitsPerAccount(t *testing.T) {
	e := start(t)
	ctx := t.Context()
	if err := e.m.AddTenant("C", Limits{MemoryBytes: 1 << 20, DiskBytes: 1 << 20, Streams: 2, Consumers: 1}); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(e.daemon(t, "C"))
	if err != nil {
		t.Fatal(err)
	}
	apiErr := func(err error, code jetstream.ErrorCode, desc string) {
		t.Helper()
		var ae *jetstream.APIError
		if !errors.As(err, &ae) || ae.ErrorCode != code || !strings.Contains(ae.Description, desc) {
			t.Fatalf("got %v, want JetStream API error %d %q", err, code, desc)
		}
	}
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "big", Subjects: []string{"big"}, MaxBytes: 2 << 20})
	apiErr(err, 10047, "insufficient storage resources")
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "bigmem", Subjects: []string{"bigmem"}, MaxBytes: 2 << 20, Storage: jetstream.MemoryStorage})
	apiErr(err, 10028, "insufficient memory resources")

	s1, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "s1", Subjects: []string{"s1"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "s2", Subjects: []string{"s2"}}); err != nil {
		t.Fatal(err)
	}
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "s3", Subjects: []string{"s3"}})
	apiErr(err, 10027, "maximum number of streams reached")

	if _, err := s1.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "c1"}); err != nil {
		t.Fatal(err)
	}
	_, err = s1.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "c2"})
	apiErr(err, 10026, "maximum consumers limit reached")

	// Writes past the account's disk limit are refused by the server.
	payload := make([]byte, 64<<10)
	var pubErr error
	for i := 0; i < 64 && pubErr == nil; i++ {
		_, pubErr = js.Publish(ctx, "s1", payload)
	}
	apiErr(pubErr, 10002, "resource limits exceeded for account")
	u, err := e.m.Usage("C")
	if err != nil {
		t.Fatal(err)
	}
	if u.Streams != 2 || u.Consumers != 1 || u.DiskBytes == 0 || u.Limits.DiskBytes != 1<<20 {
		t.Fatalf("C's usage %+v", u)
	}

	// Another tenant is not limited by C's limits.
	ajs, err := jetstream.New(e.daemon(t, "A"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ajs.CreateStream(ctx, jetstream.StreamConfig{Name: "big", Subjects: []string{"big"}, MaxBytes: 2 << 20}); err != nil {
		t.Fatalf("A: %v", err)
	}

	// Raising C's limits takes effect on the running server.
	if err := e.m.AddTenant("C", Limits{MemoryBytes: 1 << 20, DiskBytes: 4 << 20, Streams: 3, Consumers: 2}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "C's third stream", func() (bool, string) {
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "s3", Subjects: []string{"s3"}})
		return err == nil, errString(err)
	})
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestAccountsSurviveRestart(t *testing.T) {
	e := start(t)
	ctx := t.Context()
	js, err := jetstream.New(e.daemon(t, "A"))
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "ardea_A_state", Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "wc", []byte("running")); err != nil {
		t.Fatal(err)
	}
	e.srv.Shutdown()

	// Files: the directory 0700, the state (seeds) 0600.
	fi, err := os.Stat(e.authDir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("%s: %v %v", e.authDir, fi.Mode(), err)
	}
	entries, _ := os.ReadDir(e.authDir)
	for _, en := range entries {
		fi, _ := en.Info()
		if fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: mode %v", en.Name(), fi.Mode())
		}
	}
	aPub, _ := e.m.AccountKey("A")

	m, err := Open(e.authDir)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := m.AccountKey("A"); got != aPub {
		t.Fatalf("A's account key %s after a restart, was %s", got, aPub)
	}
	e.m = m
	e.startServer(t)
	js, err = jetstream.New(e.daemon(t, "A"))
	if err != nil {
		t.Fatal(err)
	}
	kv, err = js.KeyValue(ctx, "ardea_A_state")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := kv.Get(ctx, "wc"); err != nil || string(v.Value()) != "running" {
		t.Fatalf("A's key after a restart: %v %v", v, err)
	}
	// B's account does not see it.
	bjs, _ := jetstream.New(e.daemon(t, "B"))
	if _, err := bjs.KeyValue(ctx, "ardea_A_state"); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Fatalf("B: A's bucket: %v", err)
	}
}

func TestCredsFromEnvironment(t *testing.T) {
	e := start(t)
	c, err := e.m.HostCreds("A", "wc", TenantIO{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "creds", "wc-1.creds")
	if err := WriteCreds(path, c); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("creds file: %v %v", fi, err)
	}
	if strings.Contains(c.String(), c.Seed) || strings.Contains(c.String(), c.JWT) {
		t.Fatalf("Creds.String shows the secret: %s", c)
	}
	for _, kv := range Env(path, c) {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	opts, err := ClientOptionsFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(e.srv.ClientURL(), append(opts, nats.NoReconnect())...)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if !strings.HasPrefix(nc.NewInbox(), "_INBOX_wc.") {
		t.Fatalf("inbox %s", nc.NewInbox())
	}
	// Content instead of a path.
	b, _ := c.Bytes()
	t.Setenv(EnvCreds, "")
	t.Setenv(EnvCredsData, string(b))
	opts, err = ClientOptionsFromEnv()
	if err != nil || len(opts) == 0 {
		t.Fatalf("%v %v", opts, err)
	}
	if os.Getenv(EnvCredsData) != "" {
		t.Fatal("the creds content stays in the environment")
	}
	// Nothing set: no options (a server without operator mode).
	t.Setenv(EnvCreds, "")
	t.Setenv(EnvInbox, "")
	if opts, err := ClientOptionsFromEnv(); err != nil || opts != nil {
		t.Fatalf("%v %v", opts, err)
	}
}

func TestRemoveTenant(t *testing.T) {
	e := start(t)
	errs := make(chan error, 8)
	dc, err := e.m.DaemonCreds("A")
	if err != nil {
		t.Fatal(err)
	}
	e.connect(t, dc, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err }))
	b := e.daemon(t, "B")
	aKey, _ := e.m.AccountKey("A")
	if err := e.m.RemoveTenant("A"); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, errs, "A's daemon's error"); !errors.Is(err, nats.ErrAuthRevoked) {
		t.Fatalf("A's daemon: %v, want %v", err, nats.ErrAuthRevoked)
	}
	_, err = nats.Connect(e.srv.ClientURL(), append(dc.Options(), nats.NoReconnect())...)
	authRefused(t, "a removed tenant's credential", err)
	if _, err := e.m.DaemonCreds("A"); !errors.Is(err, ErrNoTenant) {
		t.Fatalf("DaemonCreds of a removed tenant: %v", err)
	}
	if got := e.m.Tenants(); !slices.Equal(got, []string{"B"}) {
		t.Fatalf("tenants %v", got)
	}
	if err := b.Flush(); err != nil {
		t.Fatalf("B after A's removal: %v", err)
	}
	// A tenant of the same name again is a new account.
	if err := e.m.AddTenant("A", Limits{}); err != nil {
		t.Fatal(err)
	}
	if k, _ := e.m.AccountKey("A"); k == aKey {
		t.Fatal("the new A has the old account key")
	}
	e.daemon(t, "A")
	if err := e.m.AddTenant("a.b", Limits{}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("AddTenant(a.b): %v", err)
	}
	if _, err := e.m.HostCreds("B", "x>", TenantIO{}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("HostCreds(B, x>): %v", err)
	}
}

// TestRevokeHostUsers: one container's credential of a topology is
// revoked (a container moved off a lost node); the topology's other
// hosts keep theirs, and a user not issued for the topology is ignored.
func TestRevokeHostUsers(t *testing.T) {
	e := start(t)
	moved, err := e.m.HostCreds("A", "wc", TenantIO{})
	if err != nil {
		t.Fatal(err)
	}
	kept, _ := e.host(t, "A", "wc")
	if err := e.m.RevokeHostUsers("A", "wc", moved.User, "UNOTISSUED"); err != nil {
		t.Fatal(err)
	}
	_, err = nats.Connect(e.srv.ClientURL(), append(moved.Options(), nats.NoReconnect())...)
	authRefused(t, "the moved container's revoked credential", err)
	if err := kept.Flush(); err != nil {
		t.Fatalf("the topology's other host after one user's revocation: %v", err)
	}
	if err := e.m.RevokeHostUsers("nosuch", "wc", "U"); !errors.Is(err, ErrNoTenant) {
		t.Errorf("a tenant that does not exist: %v, want ErrNoTenant", err)
	}
}
