package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/scheduler/api"
)

// isolateContexts points the user's config directory at a temporary one
// and clears the variables the resolution reads.
func isolateContexts(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	for _, v := range []string{"ARDEA_SERVER", "ARDEA_TOKEN", "ARDEA_CONTEXT"} {
		t.Setenv(v, "")
	}
	return dir
}

// runCLI runs the CLI in this process with stdin, returning its stdout,
// stderr and error.
func runCLI(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	root := newRoot()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	err := root.ExecuteContext(t.Context())
	return out.String(), errb.String(), err
}

// TestContextsFileIsTheTests: the contexts file this package's tests (and
// the `ardea local` and `ardea demo` processes they start, which inherit
// the environment) write is in TestMain's temporary config dir, never the
// user's ~/.config/ardea/contexts.json.
func TestContextsFileIsTheTests(t *testing.T) {
	path, err := contextsPath()
	if err != nil {
		t.Fatal(err)
	}
	testutil.CheckUserConfigIsolated(t, path)
}

func TestContextFileModes(t *testing.T) {
	dir := isolateContexts(t)
	// A directory made looser before is tightened.
	if err := os.MkdirAll(filepath.Join(dir, "ardea"), 0o755); err != nil {
		t.Fatal(err)
	}
	path, err := saveContext("local", clientContext{Server: "http://127.0.0.1:7780", Token: "ardea_x"})
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(dir, "ardea", "contexts.json") {
		t.Errorf("path %s", path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("contexts.json mode %v, want 0600", fi.Mode().Perm())
	}
	di, _ := os.Stat(filepath.Dir(path))
	if di.Mode().Perm() != 0o700 {
		t.Errorf("its directory's mode %v, want 0700", di.Mode().Perm())
	}
	cf, _, err := loadContexts()
	if err != nil || cf.Current != "local" || cf.Contexts["local"].Token != "ardea_x" {
		t.Fatalf("loaded %+v, %v", cf, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("%d files beside contexts.json's, want none (no temporary file left)", len(entries)-1)
	}
}

func TestResolveEndpoint(t *testing.T) {
	isolateContexts(t)
	ep, err := resolveEndpoint("", "", "")
	if err != nil || ep.Server != api.DefaultListen || ep.Token != "" {
		t.Fatalf("no contexts: %+v, %v", ep, err)
	}
	if _, err := saveContext("b", clientContext{Server: "http://h2:2", Token: "T2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := saveContext("a", clientContext{Server: "http://h1:1", Token: "T1"}); err != nil { // current
		t.Fatal(err)
	}
	for _, tc := range []struct {
		what                   string
		env                    map[string]string
		server, token, context string
		wantServer, wantToken  string
		wantErr                string
	}{
		{what: "the current context", wantServer: "http://h1:1", wantToken: "T1"},
		{what: "ARDEA_TOKEN over the context", env: map[string]string{"ARDEA_TOKEN": "E"}, wantServer: "http://h1:1", wantToken: "E"},
		{what: "--token over ARDEA_TOKEN", env: map[string]string{"ARDEA_TOKEN": "E"}, token: "F", wantServer: "http://h1:1", wantToken: "F"},
		{what: "--server of the current context, spelled otherwise", server: "h1:1/", wantServer: "h1:1/", wantToken: "T1"},
		{what: "--server of another saved context", server: "h2:2", wantServer: "h2:2", wantToken: "T2"},
		{what: "ARDEA_SERVER of another saved context", env: map[string]string{"ARDEA_SERVER": "http://h2:2"}, wantServer: "http://h2:2", wantToken: "T2"},
		{what: "a server no context is for gets no context's token", server: "h3:3", wantServer: "h3:3", wantToken: ""},
		{what: "a server no context is for, with ARDEA_TOKEN", server: "h3:3", env: map[string]string{"ARDEA_TOKEN": "E"}, wantServer: "h3:3", wantToken: "E"},
		{what: "--context", context: "b", wantServer: "http://h2:2", wantToken: "T2"},
		{what: "ARDEA_CONTEXT", env: map[string]string{"ARDEA_CONTEXT": "b"}, wantServer: "http://h2:2", wantToken: "T2"},
		{what: "--context over ARDEA_CONTEXT", env: map[string]string{"ARDEA_CONTEXT": "b"}, context: "a", wantServer: "http://h1:1", wantToken: "T1"},
		{what: "--context with its own server", context: "b", server: "h2:2", wantServer: "h2:2", wantToken: "T2"},
		{what: "--context with another server", context: "b", server: "h1:1", wantErr: `context "b" is for http://h2:2, not h1:1`},
		{what: "a missing --context", context: "nope", wantErr: `no context "nope"`},
	} {
		t.Run(tc.what, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			ep, err := resolveEndpoint(tc.server, tc.token, tc.context)
			if tc.wantErr != "" {
				var ue usageError
				if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %+v, %v; want the usage error %q", ep, err, tc.wantErr)
				}
				return
			}
			if err != nil || ep.Server != tc.wantServer || ep.Token != tc.wantToken {
				t.Fatalf("got %+v, %v; want server %s token %q", ep, err, tc.wantServer, tc.wantToken)
			}
		})
	}
}

// TestCommandsSendTheToken: an ordinary command (list) sends the resolved
// token as a bearer token, and none when there is none.
func TestCommandsSendTheToken(t *testing.T) {
	isolateContexts(t)
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, "[]")
	}))
	defer srv.Close()
	if _, err := saveContext("here", clientContext{Server: srv.URL, Token: "ardea_ctx"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCLI(t, "", "list"); err != nil { // server and token from the context
		t.Fatal(err)
	}
	t.Setenv("ARDEA_TOKEN", "ardea_env")
	if _, _, err := runCLI(t, "", "list"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCLI(t, "", "list", "--token", "ardea_flag"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ARDEA_TOKEN", "")
	if _, _, err := runCLI(t, "", "context", "delete", "here"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCLI(t, "", "list", "--server", srv.URL); err != nil {
		t.Fatal(err)
	}
	want := []string{"Bearer ardea_ctx", "Bearer ardea_env", "Bearer ardea_flag", ""}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("Authorization headers %q, want %q", got, want)
	}
}

func TestContextCommands(t *testing.T) {
	isolateContexts(t)
	for _, c := range []struct{ name, server string }{{"b", "http://h2:2"}, {"a", "http://h1:1"}} {
		if _, err := saveContext(c.name, clientContext{Server: c.server, Token: "ardea_secret_" + c.name, Tenant: "acme", Scope: "read"}); err != nil {
			t.Fatal(err)
		}
	}
	out, _, err := runCLI(t, "", "context", "list", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var rows []contextRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Name != "a" || !rows[0].Current || rows[1].Current {
		t.Fatalf("rows %+v", rows)
	}
	if strings.Contains(out, "ardea_secret") {
		t.Fatalf("context list shows a token:\n%s", out)
	}
	if _, _, err := runCLI(t, "", "context", "use", "b"); err != nil {
		t.Fatal(err)
	}
	if ep, _ := resolveEndpoint("", "", ""); ep.Server != "http://h2:2" {
		t.Fatalf("after use b: %+v", ep)
	}
	if _, _, err := runCLI(t, "", "context", "use", "nope"); err == nil || !strings.Contains(err.Error(), `no context "nope"`) {
		t.Fatalf("use nope: %v", err)
	}
	if _, _, err := runCLI(t, "", "context", "delete", "b"); err != nil {
		t.Fatal(err)
	}
	if ep, _ := resolveEndpoint("", "", ""); ep.Server != api.DefaultListen || ep.Token != "" {
		t.Fatalf("after deleting the current context: %+v", ep)
	}
}

func TestSaveLocalContext(t *testing.T) {
	isolateContexts(t)
	if _, err := saveContext("other", clientContext{Server: "http://h9:9", Token: "T9"}); err != nil {
		t.Fatal(err)
	}
	if _, err := saveLocalContext("127.0.0.1:7781", "ardea_admin"); err != nil {
		t.Fatal(err)
	}
	ep, err := resolveEndpoint("", "", "")
	if err != nil || ep.Server != "http://127.0.0.1:7781" || ep.Token != "ardea_admin" || ep.Context != "127.0.0.1:7781" {
		t.Fatalf("after saveLocalContext: %+v, %v", ep, err)
	}
	if ep, _ := resolveEndpoint("h9:9", "", ""); ep.Token != "T9" {
		t.Fatalf("the other context's token is gone: %+v", ep)
	}
}
