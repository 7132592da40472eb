package main

// ardea token create|list|revoke: API tokens, through the daemon's admin
// API (internal/auth's Handler; an admin token).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ardea-dev/ardea/internal/auth"
)

func newTokenCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Create, list and revoke API tokens (takes an admin token)",
		Long: `A token names one tenant and one scope: read (list and inspect), operate
(also activate, deactivate, update, restart, rollback), deploy (also submit,
swap, apply, kill, replay dead letters), admin (tenants, tokens, quotas and
the audit log, for every tenant; the default tenant's tokens only) or
metrics (/metrics only, for Prometheus). The daemon keeps only a hash of a
token's secret: 'token create' prints it once, alone on the last line of its
output. See docs/tenancy.md.`,
		Example: `  ardea token create --tenant acme --scope deploy --name ci --expires 90d
  ardea token list --tenant acme
  ardea token revoke 3f9a0c12b7e4`,
	}
	cmd.AddCommand(newTokenCreateCmd(), newTokenListCmd(), newTokenRevokeCmd())
	return cmd
}

func newTokenCreateCmd() *cobra.Command {
	var (
		cf                          clientFlags
		tenant, scope, name, expiry string
	)
	cmd := &cobra.Command{
		Use:   "create --tenant T --scope S",
		Short: "Create a token; its secret is printed once, alone on the last line",
		Long: `Create a token for a tenant with one scope (read, operate, deploy, admin,
metrics). The secret is printed once, alone on the last line of stdout, so
a script takes it with tail -n 1; it cannot be shown again (the daemon keeps
only its hash). --expires takes days (30d) or a duration (720h); without it
the token does not expire. Hand it over through ARDEA_TOKEN or
'ardea login SERVER --token -' (from stdin), not on a command line, which
other local users can read.`,
		Example: `  ardea token create --tenant acme --scope deploy --name ci --expires 90d
  ardea token create --tenant acme --scope read | tail -n 1 | ardea login 10.0.0.5:7780 --token -
  ardea token create --tenant default --scope metrics --name prometheus -o json`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if tenant == "" || scope == "" {
				return usageError{errors.New("ardea token create: needs --tenant T and --scope S (read, operate, deploy, admin or metrics)")}
			}
			sc, err := auth.ParseScope(scope)
			if err != nil {
				return usageError{fmt.Errorf("--scope: %w", err)}
			}
			ttl, err := auth.ParseExpiry(expiry)
			if err != nil {
				return usageError{fmt.Errorf("--expires: %w", err)}
			}
			req := auth.CreateTokenRequest{Tenant: tenant, Scope: sc, Name: name}
			if ttl > 0 {
				req.ExpiresIn = ttl.String()
			}
			var nt auth.NewToken
			if err := cf.client().Do(cmd.Context(), http.MethodPost, "/api/v1/tokens", req, &nt); err != nil {
				return err
			}
			return outputOf(cmd).Print(cmd.OutOrStdout(), nt, func(w io.Writer) error {
				exp := "never expires"
				if !nt.Expires.IsZero() {
					exp = "expires " + nt.Expires.Local().Format(time.DateTime)
				}
				fmt.Fprintf(w, "token %s created for tenant %s, scope %s, %s\n", nt.ID, nt.Tenant, nt.Scope, exp)
				fmt.Fprintln(w, "its secret follows; it is not shown again:")
				_, err := fmt.Fprintln(w, nt.Secret)
				return err
			})
		},
	}
	positional(cmd)
	cf.add(cmd)
	addOutput(cmd)
	cmd.Flags().StringVar(&tenant, "tenant", "", "the token's tenant")
	cmd.Flags().StringVar(&scope, "scope", "", "read, operate, deploy, admin or metrics")
	cmd.Flags().StringVar(&name, "name", "", "what the token is for (ci, alice); shown in lists and the audit log")
	cmd.Flags().StringVar(&expiry, "expires", "", "lifetime: days (30d) or a duration (720h); default: never")
	_ = cmd.RegisterFlagCompletionFunc("tenant", func(c *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		return completeTenants(c, args), cobra.ShellCompDirectiveNoFileComp
	})
	var scopes []string
	for _, s := range auth.Scopes {
		scopes = append(scopes, string(s))
	}
	_ = cmd.RegisterFlagCompletionFunc("scope", cobra.FixedCompletions(scopes, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func newTokenListCmd() *cobra.Command {
	var (
		cf     clientFlags
		tenant string
	)
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List tokens (never their secrets): active, expired and revoked",
		Example: "  ardea token list\n  ardea token list --tenant acme -o json",
		RunE: func(cmd *cobra.Command, _ []string) error {
			p := "/api/v1/tokens"
			if tenant != "" {
				p += "?" + url.Values{"tenant": {tenant}}.Encode()
			}
			var ts []auth.Token
			if err := cf.client().Do(cmd.Context(), http.MethodGet, p, nil, &ts); err != nil {
				return err
			}
			if ts == nil {
				ts = []auth.Token{}
			}
			return outputOf(cmd).Print(cmd.OutOrStdout(), ts, func(w io.Writer) error { return printTokens(w, ts) })
		},
	}
	positional(cmd)
	cf.add(cmd)
	addOutput(cmd)
	cmd.Flags().StringVar(&tenant, "tenant", "", "only this tenant's tokens")
	_ = cmd.RegisterFlagCompletionFunc("tenant", func(c *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		return completeTenants(c, args), cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

func printTokens(w io.Writer, ts []auth.Token) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTENANT\tNAME\tSCOPE\tSTATE\tEXPIRES\tCREATED")
	for _, t := range ts {
		exp := "never"
		if !t.Expires.IsZero() {
			exp = t.Expires.Local().Format(time.DateTime)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Tenant, t.Name, t.Scope, t.State, exp, t.Created.Local().Format(time.DateTime))
	}
	return tw.Flush()
}

func newTokenRevokeCmd() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:     "revoke ID",
		Short:   "Revoke a token: it stops working at once",
		Example: "  ardea token revoke 3f9a0c12b7e4",
		RunE: func(cmd *cobra.Command, args []string) error {
			if !auth.ValidTokenID(args[0]) {
				return usageError{fmt.Errorf("ardea token revoke: %q is not a token id (12 hex digits, see ardea token list)", args[0])}
			}
			var t auth.Token
			if err := cf.client().Do(cmd.Context(), http.MethodDelete, "/api/v1/tokens/"+args[0], nil, &t); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "token %s (tenant %s, scope %s) revoked\n", t.ID, t.Tenant, t.Scope)
			return nil
		},
	}
	positional(cmd, posArg{name: "ID", what: "the token's id (see ardea token list)", complete: completeTokenIDs})
	cf.add(cmd)
	return cmd
}

// completeTokenIDs lists the active tokens' ids.
func completeTokenIDs(cmd *cobra.Command, _ []string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
	defer cancel()
	var ts []auth.Token
	if err := completionClient(cmd).Do(ctx, http.MethodGet, "/api/v1/tokens", nil, &ts); err != nil {
		return nil
	}
	var out []string
	for _, t := range ts {
		if t.State == auth.StateActive {
			out = append(out, t.ID+"\t"+t.Tenant+" "+string(t.Scope)+" "+t.Name)
		}
	}
	return out
}
