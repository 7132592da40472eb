package plugin

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// Reference headings per kind.
var referenceHeadings = map[Kind]string{
	KindSpout:       "Spouts",
	KindBolt:        "Bolts",
	KindDeadLetter:  "Dead-letter destinations",
	KindMetricsSink: "Metrics sinks",
}

var referenceIntros = map[Kind]string{
	KindSpout: "Selected with `module: builtin:<name>`; the config keys below go under the component's `config:`.",
	KindBolt:  "Selected with `module: builtin:<name>`; the config keys below go under the component's `config:`.",
	KindDeadLetter: "Where a spout's given-up records are listed and replayed from (`ardea dlq`), registered under the spout's name. " +
		"Its fields are the spout's config keys it reads.",
	KindMetricsSink: "Configured in a deployment file's `metrics:` section (`ardea local --config`, `ardea run --config`) under the sink's name, " +
		"beside `interval` and `queue_batches`.",
}

// WriteReference writes the Markdown reference of every plugin registered
// in e: one section per kind (level-3 headings), one per plugin (level 4)
// with its summary, a table of its fields (type, default, doc) and its
// output streams. docs/topology.md holds the default environment's.
func (e *Environment) WriteReference(w io.Writer) error {
	var b bytes.Buffer
	for i, kind := range Kinds {
		specs := e.Specs(kind)
		if len(specs) == 0 {
			continue
		}
		if i > 0 && b.Len() > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "### %s\n\n%s\n", referenceHeadings[kind], referenceIntros[kind])
		for _, s := range specs {
			writeSpec(&b, s)
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

func writeSpec(b *bytes.Buffer, s Spec) {
	title := "`" + s.Module() + "`"
	switch s.Kind {
	case KindDeadLetter:
		title = "Dead letters of `" + s.Module() + "`"
	case KindMetricsSink:
		title = "`metrics." + s.Name + "`"
	}
	fmt.Fprintf(b, "\n#### %s\n\n%s\n", title, text(s.Summary))
	if len(s.Fields) > 0 {
		b.WriteString("\n| field | type | default | doc |\n|---|---|---|---|\n")
		for _, f := range s.Fields {
			typ := string(f.Type)
			if f.Type == TypeEnum {
				typ = strings.Join(f.Enum, " \\| ")
			}
			if f.Min != "" {
				typ += ", >= " + f.Min
			}
			def := ""
			switch {
			case f.Required:
				def = "required"
			case f.Default != "":
				def = "`" + f.Default + "`"
			}
			fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", f.Name, typ, def, cell(f.Doc))
		}
	}
	switch {
	case s.Kind == KindSpout || (s.Kind == KindBolt && len(s.Outputs) > 0):
		var streams []string
		for _, name := range slices.Sorted(maps.Keys(s.Outputs)) {
			streams = append(streams, fmt.Sprintf("`%s` (%s)", name, strings.Join(s.Outputs[name], ", ")))
		}
		fmt.Fprintf(b, "\nOutput streams: %s.\n", strings.Join(streams, "; "))
	case s.Kind == KindBolt:
		b.WriteString("\nNo output streams (a sink).\n")
	}
}

// cell escapes text for a table cell.
func cell(s string) string { return strings.ReplaceAll(text(s), "|", "\\|") }

// text escapes '<' outside code spans, so that "ardea-<topology>" is not
// read as an HTML tag.
func text(s string) string {
	var b strings.Builder
	code := false
	for _, r := range s {
		switch {
		case r == '`':
			code = !code
		case r == '<' && !code:
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
