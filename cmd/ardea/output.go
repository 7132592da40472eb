package main

// The one output convention of the read commands: -o table|json|yaml.
// table is for people (aligned columns); json and yaml print the same
// document, the daemon's JSON field names, so a script reads either.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
)

// outputFormats are the values -o takes.
var outputFormats = []string{"table", "json", "yaml"}

// formatValue is the value of -o (and of the deprecated --format): a
// value outside outputFormats is refused while the flags are parsed, so
// the error names the flag and comes before any daemon is asked.
type formatValue struct{ p *string }

func (v formatValue) String() string { return *v.p }
func (v formatValue) Type() string   { return "format" }

func (v formatValue) Set(s string) error {
	if !slices.Contains(outputFormats, s) {
		return fmt.Errorf("unknown output format; want %s", orList(outputFormats))
	}
	*v.p = s
	return nil
}

// orList is "a, b or c".
func orList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// addOutput gives cmd -o table|json|yaml. legacy names the flags the
// command had before, kept for one release as deprecated aliases:
// "json" (--json, the same as -o json) and "format" (--format VALUE, the
// same as -o VALUE).
func addOutput(cmd *cobra.Command, legacy ...string) {
	format := "table"
	cmd.Flags().VarP(formatValue{&format}, "output", "o", "output format: "+orList(outputFormats))
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(outputFormats, cobra.ShellCompDirectiveNoFileComp))
	for _, l := range legacy {
		switch l {
		case "json":
			cmd.Flags().Bool("json", false, "print JSON (deprecated: -o json)")
			_ = cmd.Flags().MarkDeprecated("json", "use -o json")
		case "format":
			cmd.Flags().Var(formatValue{&format}, "format", "output format (deprecated: -o)")
			_ = cmd.Flags().MarkDeprecated("format", "use -o")
		default:
			panic("addOutput: no legacy flag " + l)
		}
	}
}

// output is the format a command was asked for.
type output struct{ format string }

// outputOf reads the flags addOutput gave cmd: -o, else a deprecated
// alias, else table.
func outputOf(cmd *cobra.Command) output {
	fs := cmd.Flags()
	if j, err := fs.GetBool("json"); err == nil && j && !fs.Changed("output") {
		return output{"json"}
	}
	if f := fs.Lookup("output"); f != nil {
		return output{f.Value.String()}
	}
	return output{"table"}
}

// Format is the chosen format.
func (o output) Format() string { return o.format }

// Print writes v as JSON or YAML, or calls table for -o table.
func (o output) Print(w io.Writer, v any, table func(io.Writer) error) error {
	return printAs(w, o.format, v, table)
}

// printAs is the one printer of every read command.
func printAs(w io.Writer, format string, v any, table func(io.Writer) error) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case "yaml":
		return writeYAML(w, v)
	case "table", "":
		return table(w)
	}
	return fmt.Errorf("output format %q: want %s", format, orList(outputFormats))
}

// writeYAML prints v's JSON document as YAML: the same field names and
// order as -o json (JSON is YAML, so the parser keeps the order; only the
// flow style and quoting of the JSON text are dropped).
func writeYAML(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return jsonToYAML(w, b)
}

// jsonToYAML prints one JSON document as a YAML document.
func jsonToYAML(w io.Writer, doc []byte) error {
	var n yaml.Node
	if err := yaml.Unmarshal(doc, &n); err != nil {
		return fmt.Errorf("output as yaml: %w", err)
	}
	plain(&n)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return fmt.Errorf("output as yaml: %w", err)
	}
	if err := enc.Close(); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// plain drops the styles the JSON text gave the nodes (flow mappings,
// double-quoted strings); the encoder quotes what needs it.
func plain(n *yaml.Node) {
	n.Style = 0
	for _, c := range n.Content {
		plain(c)
	}
}
