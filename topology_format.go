package ardea

import (
	"bytes"
	"maps"
	"slices"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// Format renders t as canonical YAML: every default spelled out, keys in a
// fixed order, config keys sorted. Parse(Format(t)) yields t again (spouts
// listed before bolts). It is meant for golden files, `ardea` output and
// storing a submitted topology.
func (t *Topology) Format() ([]byte, error) {
	root := mapNode()
	addKV(root, "name", strNode(t.Name))
	if len(t.Config) > 0 {
		addKV(root, "config", configNode(t.Config))
	}
	for _, kind := range []Kind{Spout, Bolt} {
		list := t.ofKind(kind)
		if len(list) == 0 {
			continue
		}
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		for _, c := range list {
			seq.Content = append(seq.Content, componentNode(c))
		}
		addKV(root, string(kind)+"s", seq)
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func mapNode() *yaml.Node { return &yaml.Node{Kind: yaml.MappingNode} }

func addKV(m *yaml.Node, k string, v *yaml.Node) {
	m.Content = append(m.Content, strNode(k), v)
}

func strNode(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
}

// valueNode renders a config value plainly when that reads back as the
// same text (numbers, bools), quoted when a plain scalar would be null.
func valueNode(s string) *yaml.Node {
	switch s {
	case "", "~", "null", "Null", "NULL":
		return strNode(s)
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Value: s}
}

func configNode(cfg map[string]string) *yaml.Node {
	m := mapNode()
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		addKV(m, k, valueNode(cfg[k]))
	}
	return m
}

func flowList(items []string) *yaml.Node {
	seq := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
	for _, s := range items {
		seq.Content = append(seq.Content, strNode(s))
	}
	return seq
}

func componentNode(c *Component) *yaml.Node {
	m := mapNode()
	addKV(m, "name", strNode(c.Name))
	addKV(m, "module", strNode(c.Module))
	addKV(m, "parallelism", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(c.Parallelism)})
	if len(c.Config) > 0 {
		addKV(m, "config", configNode(c.Config))
	}
	if c.Outputs != nil {
		outs := mapNode()
		if len(c.Outputs) == 0 {
			outs.Style = yaml.FlowStyle
		}
		for _, s := range c.StreamNames() {
			addKV(outs, s, flowList(c.Outputs[s]))
		}
		addKV(m, "outputs", outs)
	}
	if len(c.Inputs) > 0 {
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		for _, in := range c.Inputs {
			im := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
			addKV(im, "from", strNode(in.From))
			addKV(im, "stream", strNode(in.StreamName()))
			addKV(im, "grouping", strNode(in.GroupingName()))
			if len(in.Fields) > 0 {
				addKV(im, "fields", flowList(in.Fields))
			}
			seq.Content = append(seq.Content, im)
		}
		addKV(m, "inputs", seq)
	}
	return m
}
