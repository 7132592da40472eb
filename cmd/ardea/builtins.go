package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/sinks"
)

// builtin is one plugin as `ardea builtins` prints it.
type builtin struct {
	Kind    plugin.Kind         `json:"kind"`
	Name    string              `json:"name"`
	Use     string              `json:"use"`
	Summary string              `json:"summary"`
	Fields  []plugin.Field      `json:"fields"`
	Outputs map[string][]string `json:"outputs,omitempty"`
}

// kindValue is --kind: one of plugin.Kinds.
type kindValue struct{ k *plugin.Kind }

func (v kindValue) String() string { return string(*v.k) }
func (v kindValue) Type() string   { return "kind" }

func (v kindValue) Set(s string) error {
	if !plugin.Kind(s).Valid() {
		return fmt.Errorf("unknown plugin kind; want %s", orList(kindNames()))
	}
	*v.k = plugin.Kind(s)
	return nil
}

func kindNames() []string {
	var out []string
	for _, k := range plugin.Kinds {
		out = append(out, string(k))
	}
	return out
}

func newBuiltinsCmd() *cobra.Command {
	var kind plugin.Kind
	cmd := &cobra.Command{
		Use:   "builtins [NAME]",
		Short: "List the native plugins: spouts, bolts, dead-letter destinations and metrics sinks, with their config fields",
		Long: `builtins lists every plugin registered in this binary: the built-in spouts and
bolts (module: builtin:<name> in a topology), the dead-letter destinations
of spouts (ardea dlq) and the metrics sinks (a deployment file's metrics:
section), each with its config fields, their types, defaults and docs, and
its output streams. NAME shows the plugins of that name only; --kind one
kind. docs/topology.md holds the same reference.`,
		Example: `  ardea builtins
  ardea builtins kafka
  ardea builtins --kind metrics-sink -o yaml
  ardea builtins -o json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := connectors.RegistrationError(); err != nil {
				return err
			}
			if err := sinks.RegistrationError(); err != nil {
				return err
			}
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			list, err := builtins(plugin.Default(), kind, name)
			if err != nil {
				return usageError{err}
			}
			return outputOf(cmd).Print(cmd.OutOrStdout(), list, func(w io.Writer) error { return printBuiltins(w, list) })
		},
	}
	positional(cmd, posArg{name: "NAME", what: "a plugin's name", optional: true,
		complete: func(*cobra.Command, []string) []string { return pluginNames(plugin.Default(), kind) }})
	addOutput(cmd)
	cmd.Flags().Var(kindValue{&kind}, "kind", "only plugins of this kind: "+orList(kindNames()))
	_ = cmd.RegisterFlagCompletionFunc("kind", cobra.FixedCompletions(kindNames(), cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// pluginNames lists the names registered in env (of kind, if set).
func pluginNames(env *plugin.Environment, kind plugin.Kind) []string {
	var kinds []plugin.Kind
	if kind != "" {
		kinds = append(kinds, kind)
	}
	seen := map[string]bool{}
	for _, s := range env.Specs(kinds...) {
		seen[s.Name] = true
	}
	return slices.Sorted(maps.Keys(seen))
}

// builtins lists env's plugins of kind (every kind when empty) named name
// (every name when empty); a name none has is an error naming the known.
func builtins(env *plugin.Environment, kind plugin.Kind, name string) ([]builtin, error) {
	var kinds []plugin.Kind
	if kind != "" {
		kinds = append(kinds, kind)
	}
	out := []builtin{}
	for _, s := range env.Specs(kinds...) {
		if name != "" && s.Name != name {
			continue
		}
		fields := s.Fields
		if fields == nil {
			fields = []plugin.Field{}
		}
		out = append(out, builtin{Kind: s.Kind, Name: s.Name, Use: s.Use(), Summary: s.Summary, Fields: fields, Outputs: s.Outputs})
	}
	if len(out) == 0 && name != "" {
		what := "plugin"
		if kind != "" {
			what = string(kind)
		}
		return nil, fmt.Errorf("ardea builtins: no %s named %q (known: %s)", what, name, strings.Join(pluginNames(env, kind), ", "))
	}
	return out, nil
}

// printBuiltins prints each plugin: its kind and use, its summary, a table
// of its fields and its output streams.
func printBuiltins(w io.Writer, list []builtin) error {
	for i, b := range list {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s %s (%s)\n  %s\n", b.Kind, b.Name, b.Use, b.Summary)
		if len(b.Fields) > 0 {
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "  FIELD\tTYPE\tDEFAULT\tDOC")
			for _, f := range b.Fields {
				typ := string(f.Type)
				if f.Type == plugin.TypeEnum {
					typ = strings.Join(f.Enum, "|")
				}
				if f.Min != "" {
					typ += " >= " + f.Min
				}
				def := f.Default
				if f.Required {
					def = "(required)"
				}
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", f.Name, typ, def, f.Doc)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
		if len(b.Outputs) > 0 {
			var streams []string
			for _, s := range slices.Sorted(maps.Keys(b.Outputs)) {
				streams = append(streams, s+" ("+strings.Join(b.Outputs[s], ", ")+")")
			}
			fmt.Fprintf(w, "  outputs: %s\n", strings.Join(streams, "; "))
		}
	}
	return nil
}
