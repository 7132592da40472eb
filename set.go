package ardea

import (
	"fmt"
	"strconv"
	"strings"
)

// Set applies one override in the form the CLI's --set flag takes:
//
//	comp.key=value         sets key in component comp's config
//	comp.parallelism=N     sets comp's parallelism
//	comp.module=PATH       replaces comp's module (relative to the topology's folder)
//	topology.KEY=VALUE     sets the topology-level setting "topology.KEY"
//
// The key may itself contain dots (kafka.sasl.mechanism=PLAIN sets
// "sasl.mechanism"); the value is everything after the first '=' and may be
// empty. Set does not validate the result; call Validate afterwards.
func (t *Topology) Set(expr string) error {
	lhs, value, ok := strings.Cut(expr, "=")
	if !ok {
		return fmt.Errorf("set %q: malformed, expected comp.key=value, comp.parallelism=N or topology.KEY=VALUE", expr)
	}
	comp, key, ok := strings.Cut(strings.TrimSpace(lhs), ".")
	if !ok || comp == "" || key == "" {
		return fmt.Errorf("set %q: malformed left-hand side %q, expected comp.key or topology.KEY", expr, lhs)
	}
	if comp == "topology" {
		if t.Config == nil {
			t.Config = map[string]string{}
		}
		t.Config["topology."+key] = value
		return nil
	}
	c := t.Component(comp)
	if c == nil {
		names := make([]string, 0, len(t.Components))
		for _, c := range t.Components {
			names = append(names, c.Name)
		}
		return fmt.Errorf("set %q: no component named %q (components: %s)%s", expr, comp, strings.Join(names, ", "), didYouMean(comp, names))
	}
	if key == "parallelism" {
		n, err := strconv.Atoi(strings.TrimSpace(value))
		if err != nil {
			return fmt.Errorf("set %q: parallelism of %s must be an integer, got %q", expr, comp, value)
		}
		c.Parallelism = n
		return nil
	}
	if key == "module" {
		if strings.TrimSpace(value) == "" {
			return fmt.Errorf("set %q: module of %s must not be empty", expr, comp)
		}
		c.Module = strings.TrimSpace(value)
		return nil
	}
	if c.Config == nil {
		c.Config = map[string]string{}
	}
	c.Config[key] = value
	return nil
}

// SetAll applies several Set expressions in order and stops at the first
// error.
func (t *Topology) SetAll(exprs []string) error {
	for _, e := range exprs {
		if err := t.Set(e); err != nil {
			return err
		}
	}
	return nil
}
