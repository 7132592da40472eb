package main

// ardea tenant create|list|delete: the daemon's tenants, through its
// admin API (internal/auth's Handler; an admin token).

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ardea-dev/ardea/internal/auth"
)

var argTenant = posArg{name: "NAME", what: "the tenant's name (see ardea tenant list)", complete: completeTenants}

func newTenantCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tenant",
		Short: "Create, list and delete tenants (takes an admin token)",
		Long: `A tenant owns topologies, modules and tokens; tenants do not see each
other's. The daemon's first start makes the tenant "default" and an admin
token for it (<data-dir>/admin.token). Managing tenants takes a token with
scope admin. Deleting a tenant revokes its tokens; the default tenant cannot
be deleted. See docs/tenancy.md.`,
		Example: `  ardea tenant create acme
  ardea tenant list -o json
  ardea tenant delete acme`,
	}
	cmd.AddCommand(newTenantCreateCmd(), newTenantListCmd(), newTenantDeleteCmd())
	return cmd
}

func newTenantCreateCmd() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:     "create NAME",
		Short:   "Create a tenant",
		Example: "  ardea tenant create acme\n  ardea token create --tenant acme --scope deploy --name ci",
		RunE: func(cmd *cobra.Command, args []string) error {
			var t auth.Tenant
			if err := cf.client().Do(cmd.Context(), http.MethodPost, "/api/v1/tenants", auth.CreateTenantRequest{Name: args[0]}, &t); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "tenant %s created\n", t.Name)
			return nil
		},
	}
	positional(cmd, posArg{name: "NAME", what: "the new tenant's name (letters, digits, '_' or '-')"})
	cf.add(cmd)
	return cmd
}

func newTenantListCmd() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List the tenants and their active tokens",
		Example: "  ardea tenant list\n  ardea tenant list -o json",
		RunE: func(cmd *cobra.Command, _ []string) error {
			var ts []auth.Tenant
			if err := cf.client().Do(cmd.Context(), http.MethodGet, "/api/v1/tenants", nil, &ts); err != nil {
				return err
			}
			if ts == nil {
				ts = []auth.Tenant{}
			}
			return outputOf(cmd).Print(cmd.OutOrStdout(), ts, func(w io.Writer) error { return printTenants(w, ts) })
		},
	}
	positional(cmd)
	cf.add(cmd)
	addOutput(cmd)
	return cmd
}

func printTenants(w io.Writer, ts []auth.Tenant) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTOKENS\tCREATED\tBY")
	for _, t := range ts {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", t.Name, t.Tokens, t.Created.Local().Format(time.DateTime), t.CreatedBy)
	}
	return tw.Flush()
}

func newTenantDeleteCmd() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:     "delete NAME",
		Short:   "Delete a tenant and revoke its tokens",
		Example: "  ardea tenant delete acme",
		RunE: func(cmd *cobra.Command, args []string) error {
			var out auth.TenantDeleted
			if err := cf.client().Do(cmd.Context(), http.MethodDelete, "/api/v1/tenants/"+url.PathEscape(args[0]), nil, &out); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "tenant %s deleted (%d tokens revoked)\n", out.Tenant, out.RevokedTokens)
			return nil
		},
	}
	positional(cmd, argTenant)
	cf.add(cmd)
	return cmd
}

// completeTenants lists the daemon's tenants (with an admin token);
// nothing when no daemon answers or the token may not list them.
func completeTenants(cmd *cobra.Command, _ []string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
	defer cancel()
	var ts []auth.Tenant
	if err := completionClient(cmd).Do(ctx, http.MethodGet, "/api/v1/tenants", nil, &ts); err != nil {
		return nil
	}
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}
