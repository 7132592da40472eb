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
	"github.com/ardea-dev/ardea/internal/quota"
)

var argTenant = posArg{name: "NAME", what: "the tenant's name (see ardea tenant list)", complete: completeTenants}

func newTenantCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tenant",
		Short: "Create, list and delete tenants, show and set their quotas (takes an admin token)",
		Long: `A tenant owns topologies, modules and tokens; tenants do not see each
other's. The daemon's first start makes the tenant "default" and an admin
token for it (<data-dir>/admin.token). Managing tenants takes a token with
scope admin. Deleting a tenant revokes its tokens; the default tenant cannot
be deleted. Every tenant but the default one starts with default quotas sized
from the machine (ardea tenant quotas NAME shows them). See docs/tenancy.md.`,
		Example: `  ardea tenant create acme
  ardea tenant list -o json
  ardea tenant quotas acme
  ardea tenant delete acme`,
	}
	cmd.AddCommand(newTenantCreateCmd(), newTenantListCmd(), newTenantQuotasCmd(), newTenantDeleteCmd())
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
			c := cf.client()
			var ts []auth.Tenant
			if err := c.Do(cmd.Context(), http.MethodGet, "/api/v1/tenants", nil, &ts); err != nil {
				return err
			}
			// Each tenant's quotas and usage (GET .../quotas).
			rows := make([]tenantRow, 0, len(ts))
			for _, t := range ts {
				row := tenantRow{Tenant: t}
				var q quota.TenantQuotas
				if err := c.Do(cmd.Context(), http.MethodGet, "/api/v1/tenants/"+url.PathEscape(t.Name)+"/quotas", nil, &q); err == nil {
					row.Quotas, row.Usage = &q.Quotas, q.Usage
				}
				rows = append(rows, row)
			}
			return outputOf(cmd).Print(cmd.OutOrStdout(), rows, func(w io.Writer) error { return printTenants(w, rows) })
		},
	}
	positional(cmd)
	cf.add(cmd)
	addOutput(cmd)
	return cmd
}

// tenantRow is a tenant as `ardea tenant list` shows it: with its
// effective quotas and its usage.
type tenantRow struct {
	auth.Tenant
	Quotas *quota.Quotas `json:"quotas,omitempty" yaml:"quotas,omitempty"`
	Usage  *quota.Usage  `json:"usage,omitempty" yaml:"usage,omitempty"`
}

func printTenants(w io.Writer, ts []tenantRow) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTOKENS\tTOPOLOGIES\tINSTANCES\tCONTAINERS\tCREATED\tBY")
	for _, t := range ts {
		var u quota.Usage
		if t.Usage != nil {
			u = *t.Usage
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\n", t.Name, t.Tokens, u.Topologies, u.Instances, u.Containers,
			t.Created.Local().Format(time.DateTime), t.CreatedBy)
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
