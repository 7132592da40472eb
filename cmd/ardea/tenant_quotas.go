package main

// ardea tenant quotas NAME [--set QUOTA=VALUE ...] [--reset]: a tenant's
// quotas, where each comes from, and its usage, through the admin API
// (internal/quota's Handler; an admin token).

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ardea-dev/ardea/internal/quota"
)

func newTenantQuotasCmd() *cobra.Command {
	var (
		cf    clientFlags
		sets  []string
		reset bool
	)
	cmd := &cobra.Command{
		Use:   "quotas NAME",
		Short: "Show a tenant's quotas and usage, or override them",
		Long: `Shows each quota of the tenant: its limit, the tenant's usage and where the
limit comes from: the built-in default (sized from the machine; every tenant
but "default" gets them), the deployment file, or an override set here.
--set QUOTA=VALUE overrides one (repeatable; the value as in the deployment
file: 8, 16MiB, 500m, unlimited) and keeps the other overrides; --reset drops
every override. See docs/tenancy.md, "Quotas".`,
		Example: `  ardea tenant quotas acme
  ardea tenant quotas acme --set containers=8 --set cpu=unlimited
  ardea tenant quotas acme --reset -o json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			c := cf.client()
			path := "/api/v1/tenants/" + url.PathEscape(args[0]) + "/quotas"
			var q quota.TenantQuotas
			if err := c.Do(cmd.Context(), http.MethodGet, path, nil, &q); err != nil {
				return err
			}
			if len(sets) > 0 || reset {
				o := q.Override
				if reset {
					o = quota.Overrides{}
				}
				for _, s := range sets {
					name, value, ok := strings.Cut(s, "=")
					if !ok {
						return usageError{fmt.Errorf("--set %q: want QUOTA=VALUE (quotas: %s)", s, strings.Join(quota.FieldNames(), ", "))}
					}
					if err := o.Set(strings.TrimSpace(name), value); err != nil {
						return usageError{fmt.Errorf("--set %s: %w", s, err)}
					}
				}
				if err := c.Do(cmd.Context(), http.MethodPut, path, o, &q); err != nil {
					return err
				}
			}
			return outputOf(cmd).Print(cmd.OutOrStdout(), q, func(w io.Writer) error { return printQuotas(w, q) })
		},
	}
	positional(cmd, argTenant)
	cmd.Flags().StringArrayVar(&sets, "set", nil, "QUOTA=VALUE: override a quota (repeatable)")
	cmd.Flags().BoolVar(&reset, "reset", false, "drop the tenant's overrides (back to the deployment file and the defaults)")
	cf.add(cmd)
	addOutput(cmd)
	return cmd
}

// printQuotas writes one row per quota: its limit, the usage and the
// level it comes from.
func printQuotas(w io.Writer, q quota.TenantQuotas) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "QUOTA\tLIMIT\tUSAGE\tFROM")
	for _, name := range quota.FieldNames() {
		usage := "-"
		if q.Usage != nil {
			if n, ok := q.Usage.Of(name); ok {
				usage = quota.FormatValue(name, n)
			}
		}
		from := "-"
		switch {
		case q.Override.Has(name):
			from = "override"
		case q.File.Has(name):
			from = "deployment file"
		case q.Defaults.Has(name):
			from = "default"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, q.Quotas.Limit(name), usage, from)
	}
	return tw.Flush()
}
