package main

// ardea audit: the daemon's audit log (GET /api/v1/audit; an admin token).

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ardea-dev/ardea/internal/audit"
)

func newAuditCmd() *cobra.Command {
	var (
		cf     clientFlags
		tenant string
		since  string
		limit  int
	)
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Show the audit log: every state-changing call and every refused one (takes an admin token)",
		Long: `audit prints the daemon's audit log, oldest first: each state-changing API
call (submit, swap, kill, token create, ...) and each refused call (no or a bad
token, too little scope, a foreign Host or Origin, a body too large or not
JSON), with who made it (the token, its tenant and scope), what it acted on,
its parameters without secrets, the status it got, when and from where.
--tenant keeps one tenant's records; --since keeps those from a time (RFC 3339)
or a duration back from now (1h, 30m); --limit keeps the newest N (default
100, at most 10000). The records live in a JetStream stream whose retention
the deployment sets (docs/security.md, "Audit log").`,
		Example: `  ardea audit
  ardea audit --tenant acme --since 1h
  ardea audit --since 2026-12-01T00:00:00Z --limit 1000 -o json`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{}
			if tenant != "" {
				q.Set("tenant", tenant)
			}
			if since != "" {
				if _, err := audit.ParseSince(since, time.Now()); err != nil {
					return usageError{fmt.Errorf("--since: %w", err)}
				}
				q.Set("since", since)
			}
			if limit < 1 || limit > audit.MaxLimit {
				return usageError{fmt.Errorf("--limit %d: want 1..%d", limit, audit.MaxLimit)}
			}
			q.Set("limit", strconv.Itoa(limit))
			var recs []audit.Record
			if err := cf.client().Do(cmd.Context(), http.MethodGet, "/api/v1/audit?"+q.Encode(), nil, &recs); err != nil {
				return err
			}
			if recs == nil {
				recs = []audit.Record{}
			}
			return outputOf(cmd).Print(cmd.OutOrStdout(), recs, func(w io.Writer) error { return printAudit(w, recs) })
		},
	}
	positional(cmd)
	cmd.Flags().StringVar(&tenant, "tenant", "", "only this tenant's records")
	cmd.Flags().StringVar(&since, "since", "", "only records from this time (RFC 3339) or this long ago (1h)")
	cmd.Flags().IntVar(&limit, "limit", audit.DefaultLimit, "the newest this many records")
	addOutput(cmd)
	cf.add(cmd)
	return cmd
}

// printAudit is the audit log as a table.
func printAudit(w io.Writer, recs []audit.Record) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tPRINCIPAL\tACTION\tTARGET\tRESULT\tSOURCE")
	for _, r := range recs {
		who := r.Principal
		if who == "" {
			who = "-"
		}
		target := r.Target
		if target == "" {
			target = "-"
		}
		res := "ok " + strconv.Itoa(r.Result.Code)
		if !r.Result.OK {
			res = strconv.Itoa(r.Result.Code) + " " + oneLine(r.Result.Error, 80)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Time.Local().Format(time.RFC3339), who, r.Action, target, res, r.Source)
	}
	return tw.Flush()
}

// oneLine shortens s to n bytes on one line.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n-3] + "..."
	}
	return s
}
