package packing

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// formats lists Format's formats.
var formats = []string{"table", "json"}

// Format writes p for `ardea submit --dry-run`: "table" (or "") for people,
// "json" for programs (the Plan's JSON; field names are stable).
func Format(w io.Writer, p *Plan, format string) error {
	switch format {
	case "", "table":
		return formatTable(w, p)
	case "json":
		b, err := json.MarshalIndent(p, "", "  ")
		if err != nil {
			return fmt.Errorf("topology %s: packing plan as json: %w", p.Topology, err)
		}
		_, err = w.Write(append(b, '\n'))
		return err
	}
	return fmt.Errorf("unknown format %q (want table or json)", format)
}

func formatTable(w io.Writer, p *Plan) error {
	var b strings.Builder
	fmt.Fprintf(&b, "topology %s: %s, %d containers, %d instances\n", p.Topology, p.Algorithm, len(p.Containers), p.Instances())
	b.WriteString("container limit: " + limitsText(p.Limits) + "\n")
	b.WriteString("padding: " + paddingText(p.Limits.Padding) + "\n\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CONTAINER\tINSTANCES\tCPU\tRAM\tDISK\tTASKS")
	for _, c := range p.Containers {
		tasks := make([]string, len(c.Instances))
		for i, in := range c.Instances {
			tasks[i] = in.Component + "/" + strconv.Itoa(in.Index)
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\n", c.ID, len(c.Instances), FormatCPU(c.Resources.CPU),
			FormatBytes(c.Resources.RAM), FormatBytes(c.Resources.Disk), strings.Join(tasks, " "))
	}
	fmt.Fprintf(tw, "total\t%d\t%s\t%s\t%s\n", p.Instances(), FormatCPU(p.Total.CPU), FormatBytes(p.Total.RAM), FormatBytes(p.Total.Disk))
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func limitsText(l Limits) string {
	var parts []string
	m := l.MaxContainer
	if m.CPU > 0 {
		parts = append(parts, FormatCPU(m.CPU)+" CPU")
	}
	if m.RAM > 0 {
		parts = append(parts, FormatBytes(m.RAM)+" RAM")
	}
	if m.Disk > 0 {
		parts = append(parts, FormatBytes(m.Disk)+" disk")
	}
	if l.MaxInstances > 0 {
		parts = append(parts, strconv.Itoa(l.MaxInstances)+" instances")
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func paddingText(p Padding) string {
	return fmt.Sprintf("%d%% of the instances, at least %s CPU, %s RAM, %s disk",
		p.Percent, FormatCPU(p.Min.CPU), FormatBytes(p.Min.RAM), FormatBytes(p.Min.Disk))
}
