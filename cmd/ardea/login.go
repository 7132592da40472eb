package main

// ardea login SERVER: save a server and its token as a context (the
// user's config dir, contexts.json, mode 0600), and ardea context
// list|use|delete. clientctx.go resolves them for every API call.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/scheduler/api"
)

func newLoginCmd() *cobra.Command {
	var (
		token, name string
		noVerify    bool
	)
	cmd := &cobra.Command{
		Use:   "login SERVER",
		Short: "Save a daemon's address and a token as the current context",
		Long: `Save SERVER and a token as a context (in the user's config directory,
ardea/contexts.json, mode 0600) and make it the current one: later commands
without --server talk to SERVER with that token. --token - reads the token
from stdin, so it is not on a command line (which other local users can
read); without --token, ARDEA_TOKEN is used. The token is checked against
the server first (GET /api/v1/whoami) unless --no-verify. --context names
the context (default: SERVER's host:port).`,
		Example: `  ardea login 127.0.0.1:7780 --token - < ~/.ardea/admin.token
  ardea token create --tenant acme --scope deploy | tail -n 1 | ardea login https://ardea.example.com --token - --context acme
  ARDEA_TOKEN=ardea_... ardea login 10.0.0.5:7780`,
		RunE: func(cmd *cobra.Command, args []string) error {
			server := args[0]
			tok, err := loginToken(cmd, token)
			if err != nil {
				return err
			}
			if token != "" && token != "-" {
				fmt.Fprintln(cmd.ErrOrStderr(), "ardea login: a token on the command line is visible to other local users (ps) and stays in the shell's history; --token - reads it from stdin")
			}
			if name == "" {
				name = defaultContextName(server)
			}
			c := clientContext{Server: normServer(server), Token: tok}
			if !noVerify {
				cl := api.NewClient(server)
				cl.Token = tok
				var p auth.Principal
				err := cl.Do(cmd.Context(), http.MethodGet, "/api/v1/whoami", nil, &p)
				var ae *api.APIError
				switch {
				case err == nil:
					c.Tenant, c.Scope = p.Tenant, p.Scope
				case errors.As(err, &ae) && ae.Status == http.StatusNotFound:
					fmt.Fprintf(cmd.ErrOrStderr(), "ardea login: %s cannot say whom the token names (no /api/v1/whoami); saving it unchecked\n", c.Server)
				case errors.As(err, &ae) && (ae.Status == http.StatusUnauthorized || ae.Status == http.StatusForbidden):
					return fmt.Errorf("%s refused the token (%s); nothing saved", c.Server, ae.Message)
				default:
					return fmt.Errorf("checking the token: %w (--no-verify saves it unchecked)", err)
				}
			}
			path, err := saveContext(name, c)
			if err != nil {
				return err
			}
			who := ""
			if c.Tenant != "" {
				who = fmt.Sprintf(" as tenant %s (scope %s)", c.Tenant, c.Scope)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "logged in to %s%s; context %s saved in %s and made current\n", c.Server, who, name, path)
			return nil
		},
	}
	positional(cmd, posArg{name: "SERVER", what: "the daemon's API address (host:port or URL)", complete: func(*cobra.Command, []string) []string { return nil }})
	cmd.Flags().StringVar(&token, "token", "", `the token; "-" reads it from stdin (default: ARDEA_TOKEN)`)
	cmd.Flags().StringVar(&name, "context", "", "the context's name (default: SERVER's host:port)")
	cmd.Flags().BoolVar(&noVerify, "no-verify", false, "save the token without asking the server about it")
	return cmd
}

// loginToken is the token login saves: --token's value, stdin's first
// line for "-", else ARDEA_TOKEN. It must have a token's shape.
func loginToken(cmd *cobra.Command, flag string) (string, error) {
	tok := flag
	switch {
	case flag == "-":
		line, err := bufio.NewReader(io.LimitReader(cmd.InOrStdin(), 4096)).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", fmt.Errorf("reading the token from stdin: %w", err)
		}
		tok = line
	case flag == "":
		tok = os.Getenv("ARDEA_TOKEN")
		if tok == "" {
			return "", usageError{errors.New("ardea login: needs a token: --token - reads it from stdin, or set ARDEA_TOKEN")}
		}
	}
	tok = strings.TrimSpace(tok)
	if !auth.ValidTokenFormat(tok) {
		return "", usageError{errors.New("ardea login: that is not an Ardea token (ardea_<id>_<secret>, as ardea token create prints it)")}
	}
	return tok, nil
}

func newContextCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "context",
		Short: "List, choose and delete saved contexts (ardea login)",
		Example: `  ardea context list
  ardea context use acme
  ardea context delete acme`,
	}
	cmd.AddCommand(newContextListCmd(), newContextUseCmd(), newContextDeleteCmd())
	return cmd
}

// contextRow is a context as list shows it: never its token.
type contextRow struct {
	Name    string     `json:"name"`
	Server  string     `json:"server"`
	Tenant  string     `json:"tenant,omitempty"`
	Scope   auth.Scope `json:"scope,omitempty"`
	Current bool       `json:"current"`
}

var argContext = posArg{name: "NAME", what: "a saved context (see ardea context list)", complete: completeContexts}

func newContextListCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List the saved contexts (never their tokens)",
		Example: "  ardea context list\n  ardea context list -o json",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cf, _, err := loadContexts()
			if err != nil {
				return err
			}
			rows := []contextRow{}
			for _, n := range sortedContexts(cf) {
				c := cf.Contexts[n]
				rows = append(rows, contextRow{Name: n, Server: c.Server, Tenant: c.Tenant, Scope: c.Scope, Current: n == cf.Current})
			}
			return outputOf(cmd).Print(cmd.OutOrStdout(), rows, func(w io.Writer) error {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "CURRENT\tNAME\tSERVER\tTENANT\tSCOPE")
				for _, r := range rows {
					mark := ""
					if r.Current {
						mark = "*"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", mark, r.Name, r.Server, r.Tenant, r.Scope)
				}
				return tw.Flush()
			})
		},
	}
	positional(cmd)
	addOutput(cmd)
	return cmd
}

func newContextUseCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "use NAME",
		Short:   "Make a saved context the current one",
		Example: "  ardea context use acme",
		RunE: func(cmd *cobra.Command, args []string) error {
			var server string
			if _, err := updateContexts(func(cf *contextFile, path string) error {
				c, ok := cf.Contexts[args[0]]
				if !ok {
					return noContext(args[0], path)
				}
				cf.Current, server = args[0], c.Server
				return nil
			}); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "context %s (%s) is current\n", args[0], server)
			return nil
		},
	}
	positional(cmd, argContext)
	return cmd
}

func newContextDeleteCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "delete NAME",
		Short:   "Forget a saved context and its token (the token stays valid: ardea token revoke ends it)",
		Example: "  ardea context delete acme",
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := updateContexts(func(cf *contextFile, path string) error {
				if _, ok := cf.Contexts[args[0]]; !ok {
					return noContext(args[0], path)
				}
				delete(cf.Contexts, args[0])
				if cf.Current == args[0] {
					cf.Current = ""
				}
				return nil
			}); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "context %s deleted\n", args[0])
			return nil
		},
	}
	positional(cmd, argContext)
	return cmd
}

func noContext(name, path string) error {
	return fmt.Errorf("no context %q in %s (see ardea context list)", name, path)
}

func sortedContexts(cf contextFile) []string {
	var names []string
	for n := range cf.Contexts {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func completeContexts(*cobra.Command, []string) []string {
	cf, _, err := loadContexts()
	if err != nil {
		return nil
	}
	return sortedContexts(cf)
}
