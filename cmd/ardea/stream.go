package main

// ardea stream create|ls|publish|read|rm: the tenant's own streams, its
// topologies' input and output (builtin:stream; the daemon's
// /api/v1/streams, scheduler/internal/tenantdata/streams.go). The token's
// tenant is the one acted for: another tenant's streams are not found.

import (
	"bufio"
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

var argStream = posArg{name: "NAME", what: "the stream's name (see ardea stream ls)", complete: completeStreams}

// maxPublishBody bounds one publish request's messages (the API takes a
// JSON body of at most 1 MiB); a bigger input goes in several requests.
const maxPublishBody = 512 << 10

func newStreamCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "stream",
		Short: "Create, list, publish to, read and remove the tenant's own streams",
		Long: `A stream is a JetStream stream of your tenant's own, for your topologies'
input and output: builtin:stream reads one (spout) or writes one (bolt),
by name, with no address and no admin leave. Streams live in the tenant's
NATS account and count against its jetstream_disk quota; another tenant's
streams are not visible. Creating, publishing and removing take a deploy
token; listing and reading a read token. See docs/connectors.md.`,
		Example: `  ardea stream create lines
  ardea stream publish lines "the quick brown fox" "jumps over"
  ardea stream publish lines --file words.txt
  ardea stream read counts --from 1 --limit 50 -o json
  ardea stream ls
  ardea stream rm lines`,
	}
	cmd.AddCommand(newStreamCreateCmd(), newStreamListCmd(), newStreamPublishCmd(), newStreamReadCmd(), newStreamRemoveCmd())
	return cmd
}

func newStreamCreateCmd() *cobra.Command {
	var cf clientFlags
	var maxBytes string
	cmd := &cobra.Command{
		Use:     "create NAME",
		Short:   "Create a stream",
		Example: "  ardea stream create lines\n  ardea stream create events --max-bytes 256MiB",
		RunE: func(cmd *cobra.Command, args []string) error {
			req := api.CreateStreamRequest{Name: args[0]}
			if maxBytes != "" {
				n, err := packing.ParseBytes(maxBytes)
				if err != nil || n <= 0 {
					return usageError{fmt.Errorf("--max-bytes %q: want a size such as 64MiB or 1GB", maxBytes)}
				}
				req.MaxBytes = n
			}
			var s api.StreamInfo
			if err := cf.client().Do(cmd.Context(), http.MethodPost, "/api/v1/streams", req, &s); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "stream %s created (at most %d bytes; the oldest messages are dropped past it)\n", s.Name, s.MaxBytes)
			return nil
		},
	}
	positional(cmd, posArg{name: "NAME", what: "the new stream's name (letters, digits, '_' or '-')"})
	cmd.Flags().StringVar(&maxBytes, "max-bytes", "", "the stream's size bound, e.g. 64MiB (default 1GiB, at most the tenant's jetstream_disk quota)")
	cf.add(cmd)
	return cmd
}

func newStreamListCmd() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the tenant's streams",
		Example: "  ardea stream ls\n  ardea stream ls -o json",
		RunE: func(cmd *cobra.Command, _ []string) error {
			var ss []api.StreamInfo
			if err := cf.client().Do(cmd.Context(), http.MethodGet, "/api/v1/streams", nil, &ss); err != nil {
				return err
			}
			return outputOf(cmd).Print(cmd.OutOrStdout(), ss, func(w io.Writer) error {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tMESSAGES\tBYTES\tMAX BYTES\tFIRST\tLAST\tCREATED")
				for _, s := range ss {
					fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\n", s.Name, s.Messages, s.Bytes, s.MaxBytes, s.FirstSeq, s.LastSeq,
						s.Created.Local().Format(time.DateTime))
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

func newStreamPublishCmd() *cobra.Command {
	var cf clientFlags
	var file string
	cmd := &cobra.Command{
		Use:   "publish NAME [MESSAGE...]",
		Short: "Publish messages to a stream (the arguments, else each line of --file or of stdin)",
		Example: `  ardea stream publish lines "hello world"
  ardea stream publish lines --file input.txt
  seq 1 100 | ardea stream publish numbers`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c := cf.client()
			path := "/api/v1/streams/" + url.PathEscape(args[0]) + "/messages"
			var total api.PublishResult
			send := func(msgs []string) error {
				var res api.PublishResult
				if err := c.Do(cmd.Context(), http.MethodPost, path, api.PublishRequest{Messages: msgs}, &res); err != nil {
					return fmt.Errorf("stream %s: %w (%d messages published before)", args[0], err, total.Published)
				}
				total.Published += res.Published
				total.LastSeq = res.LastSeq
				return nil
			}
			var err error
			if len(args) > 1 {
				err = send(args[1:])
			} else {
				err = publishLines(cmd, file, send)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d messages published to %s (last sequence %d)\n", total.Published, args[0], total.LastSeq)
			return nil
		},
	}
	cmd.ValidArgsFunction = func(c *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) == 0 {
			return completeStreams(c, args), cobra.ShellCompDirectiveNoFileComp
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	cmd.Flags().StringVar(&file, "file", "", "publish each line of this file ('-': stdin, the default without MESSAGE arguments)")
	cf.add(cmd)
	return cmd
}

// publishLines sends each line of file (or stdin) through send, in
// requests of at most maxPublishBody bytes.
func publishLines(cmd *cobra.Command, file string, send func([]string) error) error {
	in := cmd.InOrStdin()
	if file != "" && file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), maxPublishBody)
	var msgs []string
	size := 0
	for sc.Scan() {
		if size+len(sc.Text()) > maxPublishBody && len(msgs) > 0 {
			if err := send(msgs); err != nil {
				return err
			}
			msgs, size = msgs[:0], 0
		}
		msgs = append(msgs, sc.Text())
		size += len(sc.Text()) + 8
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading %s: %w (a line is at most %d bytes)", firstOf(file, "stdin"), err, maxPublishBody)
	}
	if len(msgs) == 0 {
		return nil
	}
	return send(msgs)
}

func newStreamReadCmd() *cobra.Command {
	var cf clientFlags
	var from uint64
	var limit int
	cmd := &cobra.Command{
		Use:   "read NAME",
		Short: "Read a stream's messages from a sequence on",
		Example: `  ardea stream read counts
  ardea stream read counts --from 120 --limit 10
  ardea stream read counts -o json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 1 {
				return usageError{fmt.Errorf("--limit %d: want at least 1", limit)}
			}
			c := cf.client()
			out := api.StreamRead{Stream: args[0], Messages: []api.StreamMessage{}, Next: from}
			for len(out.Messages) < limit {
				q := url.Values{"from": {strconv.FormatUint(out.Next, 10)}, "limit": {strconv.Itoa(min(limit-len(out.Messages), api.MaxStreamRead))}}
				var page api.StreamRead
				if err := c.Do(cmd.Context(), http.MethodGet, "/api/v1/streams/"+url.PathEscape(args[0])+"/messages?"+q.Encode(), nil, &page); err != nil {
					return err
				}
				out.Messages = append(out.Messages, page.Messages...)
				if page.Next == out.Next || len(page.Messages) == 0 {
					out.Next = page.Next
					break
				}
				out.Next = page.Next
			}
			return outputOf(cmd).Print(cmd.OutOrStdout(), out, func(w io.Writer) error {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "SEQ\tDATA")
				for _, m := range out.Messages {
					fmt.Fprintf(tw, "%d\t%s\n", m.Seq, m.Data)
				}
				return tw.Flush()
			})
		},
	}
	positional(cmd, argStream)
	cmd.Flags().Uint64Var(&from, "from", 1, "the first sequence to read (the stream's first if it is below it)")
	cmd.Flags().IntVar(&limit, "limit", 100, "the most messages to read")
	cf.add(cmd)
	addOutput(cmd)
	return cmd
}

func newStreamRemoveCmd() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:     "rm NAME",
		Aliases: []string{"delete"},
		Short:   "Remove a stream and its messages",
		Example: "  ardea stream rm lines",
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cf.client().Do(cmd.Context(), http.MethodDelete, "/api/v1/streams/"+url.PathEscape(args[0]), nil, nil); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "stream %s removed\n", args[0])
			return nil
		},
	}
	positional(cmd, argStream)
	cf.add(cmd)
	return cmd
}
