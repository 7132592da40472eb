package main

// Positional arguments: one helper declares a command's arguments, checks
// them (a missing one is named with what it is and where to find it) and
// completes them in the shell (topology names from the daemon's list,
// component names from its status, files by extension).

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ardea-dev/ardea/scheduler/api"
)

// posArg is one positional argument.
type posArg struct {
	name     string // as in Use: NAME, COMPONENT, TOPOLOGY.yaml
	what     string // what it is, for the missing-argument error
	optional bool
	// complete lists candidates; nil completes files (with exts, if any).
	complete func(cmd *cobra.Command, args []string) []string
	exts     []string
}

// The arguments the commands share.
var (
	argTopology  = posArg{name: "NAME", what: "the topology's name (see ardea list)", complete: completeTopologies}
	argComponent = posArg{name: "COMPONENT", what: "a component of the topology (see ardea status NAME)",
		complete: completeComponents}
	argInstance = posArg{name: "COMPONENT[/INDEX]", what: "a component or one of its instances, e.g. count/2",
		optional: true, complete: completeInstances}
	argTopologyFile = posArg{name: "TOPOLOGY.yaml", what: "a topology file", exts: []string{"yaml", "yml"}}
)

func (a posArg) opt() posArg { a.optional = true; return a }

// positional declares cmd's positional arguments: it sets Args (the
// check) and ValidArgsFunction (the completion).
func positional(cmd *cobra.Command, specs ...posArg) {
	cmd.Args = func(c *cobra.Command, args []string) error { return checkArgs(c.CommandPath(), specs, args) }
	cmd.ValidArgsFunction = func(c *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) >= len(specs) {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		s := specs[len(args)]
		if s.complete == nil {
			if len(s.exts) > 0 {
				return s.exts, cobra.ShellCompDirectiveFilterFileExt
			}
			return nil, cobra.ShellCompDirectiveDefault
		}
		return s.complete(c, args), cobra.ShellCompDirectiveNoFileComp
	}
}

// checkArgs names the first missing argument, or refuses extra ones.
func checkArgs(path string, specs []posArg, args []string) error {
	for i, s := range specs {
		if i >= len(args) && !s.optional {
			return usageError{fmt.Errorf("%s: missing %s, %s", path, s.name, s.what)}
		}
	}
	if len(args) > len(specs) {
		var names []string
		for _, s := range specs {
			if s.optional {
				names = append(names, "["+s.name+"]")
			} else {
				names = append(names, s.name)
			}
		}
		usage := strings.TrimSpace(path + " " + strings.Join(names, " "))
		return usageError{fmt.Errorf("%s: unexpected argument %q (usage: %s)", path, args[len(specs)], usage)}
	}
	return nil
}

// completionTimeout bounds how long a completion waits for the daemon: a
// shell must not hang on a missing one.
const completionTimeout = 2 * time.Second

// completionClient is a client for the daemon a command would talk to,
// with the token it would send (clientctx.go).
func completionClient(cmd *cobra.Command) *api.Client {
	var cf clientFlags
	for name, dst := range map[string]*string{"server": &cf.server, "token": &cf.token, "context": &cf.context} {
		if f := cmd.Flags().Lookup(name); f != nil {
			*dst = f.Value.String()
		}
	}
	c := cf.client()
	c.HTTP.Timeout = completionTimeout
	return c
}

// completeTopologies lists the daemon's topologies; nothing when no daemon
// answers.
func completeTopologies(cmd *cobra.Command, _ []string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
	defer cancel()
	rows, err := completionClient(cmd).List(ctx)
	if err != nil {
		return nil
	}
	var out []string
	for _, r := range rows {
		out = append(out, r.Name)
	}
	return out
}

// completeNames lists the names of what GET path returns (a JSON array
// of T); nothing when no daemon answers.
func completeNames[T any](path string, name func(T) string) func(*cobra.Command, []string) []string {
	return func(cmd *cobra.Command, _ []string) []string {
		ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
		defer cancel()
		var rows []T
		if err := completionClient(cmd).Do(ctx, http.MethodGet, path, nil, &rows); err != nil {
			return nil
		}
		out := make([]string, 0, len(rows))
		for _, r := range rows {
			out = append(out, name(r))
		}
		return out
	}
}

// completeStreams lists the tenant's streams, completeBuckets its KV
// buckets.
var (
	completeStreams = completeNames("/api/v1/streams", func(s api.StreamInfo) string { return s.Name })
	completeBuckets = completeNames("/api/v1/kv", func(b api.KVInfo) string { return b.Name })
)

// completionStatus is the status of the topology args[0] names.
func completionStatus(cmd *cobra.Command, args []string) (api.Status, bool) {
	if len(args) == 0 {
		return api.Status{}, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
	defer cancel()
	st, err := completionClient(cmd).Status(ctx, args[0])
	return st, err == nil
}

// completeComponents lists the components of the topology args[0] names;
// nothing when no daemon answers or it has no such topology.
func completeComponents(cmd *cobra.Command, args []string) []string {
	st, _ := completionStatus(cmd, args)
	return completeComponentsOf(st)
}

func completeComponentsOf(st api.Status) []string {
	var out []string
	for _, c := range st.Components {
		out = append(out, c.Name)
	}
	return out
}

// completeInstances lists the components of the topology args[0] names
// and their instances (count, count/0, count/1, ...).
func completeInstances(cmd *cobra.Command, args []string) []string {
	st, _ := completionStatus(cmd, args)
	out := completeComponentsOf(st)
	for _, c := range st.Containers {
		for _, in := range c.Instances {
			out = append(out, in.Name)
		}
	}
	return out
}
