package main

// ardea kv create|ls|put|get|keys|rm|rm-bucket: the tenant's own KV
// buckets, its topologies' input and output (builtin:kv; the daemon's
// /api/v1/kv, scheduler/internal/tenantdata/kv.go). The token's tenant is
// the one acted for: another tenant's buckets are not found.

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/packing"
)

var (
	argBucket = posArg{name: "BUCKET", what: "the KV bucket's name (see ardea kv ls)", complete: completeBuckets}
	argKey    = posArg{name: "KEY", what: "the key (letters, digits and - / _ = .; see ardea kv keys)"}
)

func newKVCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kv",
		Short: "Create, list, read, write and remove the tenant's own KV buckets",
		Long: `A KV bucket is a JetStream key-value bucket of your tenant's own, for your
topologies' input and output: builtin:kv follows one (spout: each key's
value, then every update) or writes one (bolt: puts, deletes), by name,
with no address and no admin leave. Buckets live in the tenant's NATS
account and count against its jetstream_disk quota; another tenant's
buckets are not visible. Creating, writing and removing take a deploy
token; listing and reading a read token. See docs/connectors.md.`,
		Example: `  ardea kv create users --history 5
  ardea kv put users user.1 '{"name": "Ada"}'
  ardea kv get users user.1
  ardea kv keys users --filter 'user.*' -o json
  ardea kv rm users user.1
  ardea kv ls
  ardea kv rm-bucket users`,
	}
	cmd.AddCommand(newKVCreateCmd(), newKVListCmd(), newKVPutCmd(), newKVGetCmd(), newKVKeysCmd(), newKVRemoveCmd(), newKVRemoveBucketCmd())
	return cmd
}

// kvValuePath is the API path of key in bucket.
func kvValuePath(bucket, key string, q url.Values) string {
	if q == nil {
		q = url.Values{}
	}
	q.Set("key", key)
	return "/api/v1/kv/" + url.PathEscape(bucket) + "/value?" + q.Encode()
}

func newKVCreateCmd() *cobra.Command {
	var cf clientFlags
	var maxBytes string
	var history int
	cmd := &cobra.Command{
		Use:     "create BUCKET",
		Short:   "Create a KV bucket",
		Example: "  ardea kv create users\n  ardea kv create sessions --history 10 --max-bytes 64MiB",
		RunE: func(cmd *cobra.Command, args []string) error {
			req := api.CreateKVRequest{Name: args[0], History: history}
			if history < 1 || history > api.MaxKVHistory {
				return usageError{fmt.Errorf("--history %d: want 1 to %d revisions per key", history, api.MaxKVHistory)}
			}
			if maxBytes != "" {
				n, err := packing.ParseBytes(maxBytes)
				if err != nil || n <= 0 {
					return usageError{fmt.Errorf("--max-bytes %q: want a size such as 64MiB or 1GB", maxBytes)}
				}
				req.MaxBytes = n
			}
			var b api.KVInfo
			if err := cf.client().Do(cmd.Context(), http.MethodPost, "/api/v1/kv", req, &b); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "KV bucket %s created (%d revisions per key, at most %d bytes; a put past it is refused)\n", b.Name, b.History, b.MaxBytes)
			return nil
		},
	}
	positional(cmd, posArg{name: "BUCKET", what: "the new bucket's name (letters, digits, '_' or '-')"})
	cmd.Flags().IntVar(&history, "history", 1, fmt.Sprintf("revisions kept per key (1 to %d)", api.MaxKVHistory))
	cmd.Flags().StringVar(&maxBytes, "max-bytes", "", "the bucket's size bound, e.g. 64MiB (default 1GiB, at most the tenant's jetstream_disk quota)")
	cf.add(cmd)
	return cmd
}

func newKVListCmd() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the tenant's KV buckets",
		Example: "  ardea kv ls\n  ardea kv ls -o yaml",
		RunE: func(cmd *cobra.Command, _ []string) error {
			var bs []api.KVInfo
			if err := cf.client().Do(cmd.Context(), http.MethodGet, "/api/v1/kv", nil, &bs); err != nil {
				return err
			}
			return outputOf(cmd).Print(cmd.OutOrStdout(), bs, func(w io.Writer) error {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tVALUES\tBYTES\tMAX BYTES\tHISTORY\tCREATED")
				for _, b := range bs {
					fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\n", b.Name, b.Values, b.Bytes, b.MaxBytes, b.History,
						b.Created.Local().Format(time.DateTime))
				}
				return tw.Flush()
			})
		},
	}
	positional(cmd)
	cf.add(cmd)
	addOutput(cmd)
	return cmd
}

func newKVPutCmd() *cobra.Command {
	var cf clientFlags
	var file string
	cmd := &cobra.Command{
		Use:   "put BUCKET KEY [VALUE]",
		Short: "Put a value under a key (the argument, else the content of --file or of stdin)",
		Example: `  ardea kv put users user.1 '{"name": "Ada"}'
  ardea kv put config app/limits --file limits.json
  echo on | ardea kv put flags beta`,
		RunE: func(cmd *cobra.Command, args []string) error {
			var value string
			switch {
			case len(args) == 3:
				value = args[2]
			default:
				in := cmd.InOrStdin()
				if file != "" && file != "-" {
					f, err := os.Open(file)
					if err != nil {
						return err
					}
					defer f.Close()
					in = f
				}
				b, err := io.ReadAll(io.LimitReader(in, maxPublishBody+1))
				if err != nil {
					return err
				}
				if len(b) > maxPublishBody {
					return fmt.Errorf("the value of %s is over %d bytes", firstOf(file, "stdin"), maxPublishBody)
				}
				value = string(b)
			}
			var e api.KVEntry
			if err := cf.client().Do(cmd.Context(), http.MethodPut, kvValuePath(args[0], args[1], nil), api.KVPutRequest{Value: value}, &e); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s/%s stored (revision %d)\n", args[0], args[1], e.Revision)
			return nil
		},
	}
	positional(cmd, argBucket, argKey, posArg{name: "VALUE", what: "the value (default: --file's or stdin's content)", optional: true})
	cmd.Flags().StringVar(&file, "file", "", "the value is this file's content ('-': stdin, the default without a VALUE argument)")
	cf.add(cmd)
	return cmd
}

func newKVGetCmd() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "get BUCKET KEY",
		Short: "Print a key's value",
		Example: `  ardea kv get users user.1
  ardea kv get users user.1 -o json   # with its revision and time`,
		RunE: func(cmd *cobra.Command, args []string) error {
			var e api.KVEntry
			if err := cf.client().Do(cmd.Context(), http.MethodGet, kvValuePath(args[0], args[1], nil), nil, &e); err != nil {
				return err
			}
			return outputOf(cmd).Print(cmd.OutOrStdout(), e, func(w io.Writer) error {
				_, err := fmt.Fprintln(w, e.Value)
				return err
			})
		},
	}
	positional(cmd, argBucket, argKey)
	cf.add(cmd)
	addOutput(cmd)
	return cmd
}

func newKVKeysCmd() *cobra.Command {
	var cf clientFlags
	var filter string
	var limit int
	cmd := &cobra.Command{
		Use:   "keys BUCKET",
		Short: "List a bucket's keys, sorted",
		Example: `  ardea kv keys users
  ardea kv keys users --filter 'user.*' --limit 50 -o json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 1 || limit > api.MaxKVKeys {
				return usageError{fmt.Errorf("--limit %d: want 1 to %d", limit, api.MaxKVKeys)}
			}
			q := url.Values{"limit": {strconv.Itoa(limit)}}
			if filter != "" {
				q.Set("filter", filter)
			}
			var ks api.KVKeys
			if err := cf.client().Do(cmd.Context(), http.MethodGet, "/api/v1/kv/"+url.PathEscape(args[0])+"/keys?"+q.Encode(), nil, &ks); err != nil {
				return err
			}
			return outputOf(cmd).Print(cmd.OutOrStdout(), ks, func(w io.Writer) error {
				for _, k := range ks.Keys {
					fmt.Fprintln(w, k)
				}
				if ks.Truncated {
					fmt.Fprintf(cmd.ErrOrStderr(), "(the first %d keys; raise --limit or narrow --filter for more)\n", len(ks.Keys))
				}
				return nil
			})
		},
	}
	positional(cmd, argBucket)
	cmd.Flags().StringVar(&filter, "filter", "", "only keys matching this pattern ('*' a token, a final '>' the rest; default all)")
	cmd.Flags().IntVar(&limit, "limit", 1000, fmt.Sprintf("the most keys to list (at most %d)", api.MaxKVKeys))
	cf.add(cmd)
	addOutput(cmd)
	return cmd
}

func newKVRemoveCmd() *cobra.Command {
	var cf clientFlags
	var purge bool
	cmd := &cobra.Command{
		Use:     "rm BUCKET KEY",
		Aliases: []string{"delete"},
		Short:   "Delete a key (a delete marker; --purge removes its history too)",
		Example: "  ardea kv rm users user.1\n  ardea kv rm users user.1 --purge",
		RunE: func(cmd *cobra.Command, args []string) error {
			var q url.Values
			if purge {
				q = url.Values{"purge": {"true"}}
			}
			if err := cf.client().Do(cmd.Context(), http.MethodDelete, kvValuePath(args[0], args[1], q), nil, nil); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s/%s deleted\n", args[0], args[1])
			return nil
		},
	}
	positional(cmd, argBucket, argKey)
	cmd.Flags().BoolVar(&purge, "purge", false, "remove the key's history too")
	cf.add(cmd)
	return cmd
}

func newKVRemoveBucketCmd() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:     "rm-bucket BUCKET",
		Short:   "Remove a KV bucket and its keys",
		Example: "  ardea kv rm-bucket users",
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cf.client().Do(cmd.Context(), http.MethodDelete, "/api/v1/kv/"+url.PathEscape(args[0]), nil, nil); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "KV bucket %s removed\n", args[0])
			return nil
		},
	}
	positional(cmd, argBucket)
	cf.add(cmd)
	return cmd
}
