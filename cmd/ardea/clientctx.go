package main

// Where an API call goes and which token it carries. Every command that
// talks to the daemon has --server, --token and --context (clientFlags).
// The server is --server, else ARDEA_SERVER, else the context's server,
// else 127.0.0.1:7780. The token is --token, else ARDEA_TOKEN, else the
// token of the context for that server. The context is --context, else
// ARDEA_CONTEXT, else the current one; contexts are saved by `ardea login`
// in the user's config directory (contexts.json, mode 0600), like
// kubeconfig or the NATS CLI's contexts.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/scheduler/api"
)

// clientFlags adds --server, --token and --context to a command.
type clientFlags struct {
	server, token, context string
}

func (f *clientFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.server, "server", "", "the daemon's API address (default: ARDEA_SERVER, else the context's server, else "+api.DefaultListen+")")
	cmd.Flags().StringVar(&f.token, "token", "", "API token (default: ARDEA_TOKEN, else the context's); on a command line it is visible to other local users, so prefer ARDEA_TOKEN or ardea login")
	cmd.Flags().StringVar(&f.context, "context", "", "use this saved context instead of the current one (env ARDEA_CONTEXT; see ardea context list)")
	prev := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		if prev != nil {
			if err := prev(c, args); err != nil {
				return err
			}
		}
		_, err := f.endpoint() // refuse a bad --context or contexts file before any work
		return err
	}
}

// client is a client for the resolved server with the resolved token.
// The command's PreRunE has checked the resolution; should it fail here
// anyway, the flags and environment alone are used.
func (f *clientFlags) client() *api.Client {
	ep, err := f.endpoint()
	if err != nil {
		ep = endpoint{Server: firstOf(f.server, os.Getenv("ARDEA_SERVER"), api.DefaultListen), Token: firstOf(f.token, os.Getenv("ARDEA_TOKEN"))}
	}
	c := api.NewClient(ep.Server)
	c.Token = ep.Token
	return c
}

func (f *clientFlags) endpoint() (endpoint, error) {
	return resolveEndpoint(f.server, f.token, f.context)
}

// endpoint is where a call goes and the token it carries.
type endpoint struct {
	Server  string
	Token   string
	Context string // the context the server or the token came from, if any
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// resolveEndpoint applies the resolution order (the file's comment) to
// the flags' values. A context's token goes only to that context's
// server: with --server or ARDEA_SERVER naming another, the token of a
// context saved for that server is used, or none.
func resolveEndpoint(server, token, contextName string) (endpoint, error) {
	cf, path, err := loadContexts()
	if err != nil {
		return endpoint{}, err
	}
	explicit := firstOf(contextName, os.Getenv("ARDEA_CONTEXT"))
	name := firstOf(explicit, cf.Current)
	cur, ok := cf.Contexts[name]
	if explicit != "" && !ok {
		return endpoint{}, usageError{fmt.Errorf("no context %q in %s (see ardea context list)", explicit, path)}
	}
	ep := endpoint{Server: firstOf(server, os.Getenv("ARDEA_SERVER"))}
	switch {
	case ep.Server == "" && ok:
		ep.Server, ep.Context = cur.Server, name
	case ep.Server == "":
		ep.Server = api.DefaultListen
	case ok && sameServer(cur.Server, ep.Server):
		ep.Context = name
	case explicit != "":
		return endpoint{}, usageError{fmt.Errorf("context %q is for %s, not %s: drop --server/ARDEA_SERVER or the context", explicit, cur.Server, ep.Server)}
	default:
		ep.Context = cf.forServer(ep.Server)
	}
	ep.Token = firstOf(token, os.Getenv("ARDEA_TOKEN"))
	if ep.Token == "" && ep.Context != "" {
		ep.Token = cf.Contexts[ep.Context].Token
	}
	return ep, nil
}

// normServer is a server's address as api.NewClient makes it a base
// URL, for comparing two spellings of one server.
func normServer(s string) string { return api.NewClient(s).Base }

func sameServer(a, b string) bool { return normServer(a) == normServer(b) }

// contextFile is contexts.json.
type contextFile struct {
	Current  string                   `json:"current,omitempty"`
	Contexts map[string]clientContext `json:"contexts"`
}

// clientContext is one saved server and its token. Tenant and scope are
// what the server said the token was when it was saved (for the list).
type clientContext struct {
	Server string     `json:"server"`
	Token  string     `json:"token,omitempty"`
	Tenant string     `json:"tenant,omitempty"`
	Scope  auth.Scope `json:"scope,omitempty"`
}

// forServer names the first context (by name) saved for server, or "".
func (cf contextFile) forServer(server string) string {
	var names []string
	for n, c := range cf.Contexts {
		if sameServer(c.Server, server) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	if len(names) == 0 {
		return ""
	}
	return names[0]
}

// contextsPath is contexts.json in the user's config directory.
func contextsPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("contexts: %w", err)
	}
	return filepath.Join(dir, "ardea", "contexts.json"), nil
}

// loadContexts reads contexts.json; a missing file is no contexts.
func loadContexts() (contextFile, string, error) {
	cf := contextFile{Contexts: map[string]clientContext{}}
	path, err := contextsPath()
	if err != nil {
		return cf, path, err
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return cf, path, nil
	}
	if err != nil {
		return cf, path, fmt.Errorf("contexts: %w", err)
	}
	if err := json.Unmarshal(b, &cf); err != nil {
		return cf, path, fmt.Errorf("contexts: %s: %w", path, err)
	}
	if cf.Contexts == nil {
		cf.Contexts = map[string]clientContext{}
	}
	return cf, path, nil
}

// saveContexts writes contexts.json: its directory mode 0700, the file
// 0600 (it holds tokens), replaced atomically.
func saveContexts(cf contextFile) (string, error) {
	path, err := contextsPath()
	if err != nil {
		return path, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return path, fmt.Errorf("contexts: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil { // ours: tighten one made looser before
		return path, fmt.Errorf("contexts: %w", err)
	}
	b, err := json.MarshalIndent(cf, "", "  ")
	if err != nil {
		return path, err
	}
	if err := auth.WriteSecretFile(path, append(b, '\n')); err != nil {
		return path, fmt.Errorf("contexts: %w", err)
	}
	return path, nil
}

// saveContext saves server and token as context name and makes it the
// current one (ardea login; ardea local saves its admin token so).
func saveContext(name string, c clientContext) (string, error) {
	return updateContexts(func(cf *contextFile, _ string) error {
		cf.Contexts[name] = c
		cf.Current = name
		return nil
	})
}

// updateContexts reads contexts.json, lets change edit it and writes it
// back, holding an exclusive lock on the contexts' directory (no lock file
// beside the contexts) throughout, so that daemons, logins and context
// commands running together (tests start many) keep every context. An
// error from change writes nothing.
func updateContexts(change func(cf *contextFile, path string) error) (string, error) {
	path, err := contextsPath()
	if err != nil {
		return path, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return path, fmt.Errorf("contexts: %w", err)
	}
	lock, err := os.Open(filepath.Dir(path))
	if err != nil {
		return path, fmt.Errorf("contexts: %w", err)
	}
	defer lock.Close() // closing unlocks too
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return path, fmt.Errorf("contexts: lock: %w", err)
	}
	cf, _, err := loadContexts()
	if err != nil {
		return path, err
	}
	if err := change(&cf, path); err != nil {
		return path, err
	}
	return saveContexts(cf)
}

// defaultContextName names a server's context: its host:port.
func defaultContextName(server string) string {
	s := normServer(server)
	if _, rest, ok := strings.Cut(s, "://"); ok {
		return rest
	}
	return s
}

// saveLocalContext saves a local daemon's address and its admin token
// (auth.Store.Bootstrap's) as the current context, named by the address,
// so that the CLI talks to it with no flags, as minikube or kind set the
// current kubeconfig context when they start a cluster. It returns the
// contexts file's path, for the daemon to print.
func saveLocalContext(server, adminToken string) (string, error) {
	return saveContext(defaultContextName(server), clientContext{
		Server: normServer(server), Token: adminToken, Tenant: auth.AdminTenant, Scope: auth.ScopeAdmin,
	})
}
