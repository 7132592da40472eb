// Package deployment reads the deployment file: the YAML file an admin
// gives `ardea local --config` and `ardea run --config` to say how this
// installation of Ardea runs (its metrics sinks, its tenants' quotas, its
// security settings, its scheduler), as opposed to a topology file, which says what one
// topology is. The file is the admin's; the format is Ardea's own.
//
// The file is read here once, within the bounds a topology document gets
// (bounds.go), and strictly at the top level; each section is handed, as
// a decoded YAML node, to the package that owns its type and checks it:
// metrics: to sinks, quotas: to internal/quota, security: to the daemon,
// scheduler: and kubernetes: to the daemon's Kubernetes runtime.
// Their errors name the file, the line where they can and the field.
package deployment

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/ardea-dev/ardea/internal/quota"
	"github.com/ardea-dev/ardea/internal/suggest"
	"github.com/ardea-dev/ardea/scheduler/daemon"
	"github.com/ardea-dev/ardea/sinks"
)

// File is a deployment file, read and checked: every section is set, a
// section the file leaves out to its empty value.
type File struct {
	// Name is the file as its errors name it (the path given).
	Name string
	// Metrics is the metrics: section (an empty one: collection on, no
	// external sinks).
	Metrics *sinks.Config
	// Quotas is the quotas: section (an empty one: no quotas from the
	// file).
	Quotas *quota.Config
	// Security is the security: section. Its Quotas is nil: the daemon
	// takes the quotas: section there, and the caller puts it in.
	Security daemon.Security
	// Kubernetes is the scheduler: value with the kubernetes: section:
	// nil for scheduler: processes (the default), else where the
	// containers run as pods (daemon.Options.Kubernetes).
	Kubernetes *daemon.Kubernetes
}

// The file's top-level keys, one per section.
const (
	keyMetrics  = "metrics"
	keyQuotas   = "quotas"
	keySecurity = "security"
	// keyScheduler is a value (processes or kubernetes), keyKubernetes
	// its section.
	keyScheduler  = "scheduler"
	keyKubernetes = "kubernetes"
)

var sections = []string{keyMetrics, keyQuotas, keySecurity, keyScheduler, keyKubernetes}

// Load reads the deployment file at path (at most MaxBytes of it) and
// parses it.
func Load(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("deployment file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("deployment file: %w", err)
	}
	return Parse(path, b)
}

// Parse parses a deployment file's content; name is the file in errors.
// An empty file is a file without sections. Every problem found is
// returned, joined: the top level's, then each section's.
func Parse(name string, b []byte) (*File, error) {
	f, _, err := parse(name, b, MaxNodes, MaxValueBytes)
	return f, err
}

// parse is Parse with the expansion bounds given; it also returns the
// nodes counted.
func parse(name string, b []byte, maxNodes, maxVal int) (*File, int, error) {
	if len(b) > MaxBytes {
		return nil, 0, fmt.Errorf("%s: %w: it has more than %d bytes (deployment.MaxBytes)", name, ErrTooLarge, MaxBytes)
	}
	root, err := decode(name, b)
	if err != nil {
		return nil, 0, err
	}
	var secs map[string]*yaml.Node // nil for an empty file: every section left out
	var errs []error
	bud := &budget{file: name, maxNodes: maxNodes, maxVal: maxVal, open: map[*yaml.Node]bool{}}
	if root != nil {
		if err := bud.count(root); err != nil {
			return nil, bud.nodes, err
		}
		x := &expander{file: name, done: map[*yaml.Node]bool{}}
		if root, err = x.expand(root); err != nil {
			return nil, bud.nodes, err
		}
		secs, errs = topLevel(name, root)
	}
	f, err := sectionsOf(name, secs, errs)
	return f, bud.nodes, err
}

// sectionsOf hands each section to its owner, which decodes and checks
// it; errs are the top level's problems, returned with the sections'.
func sectionsOf(name string, secs map[string]*yaml.Node, errs []error) (*File, error) {
	f := &File{Name: name}
	var err error
	if f.Metrics, err = sinks.ParseSection(name, secs[keyMetrics]); err != nil {
		errs = append(errs, err)
	}
	if f.Quotas, err = quota.ParseSection(name, secs[keyQuotas]); err != nil {
		errs = append(errs, err)
	}
	if f.Security, err = daemon.ParseSecurity(name, secs[keySecurity]); err != nil {
		errs = append(errs, err)
	}
	if f.Kubernetes, err = daemon.ParseScheduler(name, secs[keyScheduler], secs[keyKubernetes]); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return f, nil
}

// decode reads the file's one document; nil for an empty file (nothing,
// comments, or a null document).
func decode(name string, b []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var next yaml.Node
	if err := dec.Decode(&next); err == nil {
		return nil, fmt.Errorf("%s: line %d: a second YAML document; a deployment file holds one", name, next.Line)
	} else if !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
		return nil, nil
	}
	return root, nil
}

// topLevel returns the sections of the file's (expanded) root by key,
// and a problem for each key that is not a section's or is given twice,
// or for a root that is not a mapping.
func topLevel(name string, root *yaml.Node) (map[string]*yaml.Node, []error) {
	if root.Kind != yaml.MappingNode {
		return nil, []error{fmt.Errorf("%s: line %d: want a mapping of sections (%s), got %s", name, root.Line, strings.Join(sections, ", "), kindOf(root))}
	}
	secs := map[string]*yaml.Node{}
	var errs []error
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch {
		case k.Kind != yaml.ScalarNode:
			errs = append(errs, fmt.Errorf("%s: line %d: want a section's name (%s), got %s", name, k.Line, strings.Join(sections, ", "), kindOf(k)))
		case !slices.Contains(sections, k.Value):
			hint := ""
			if s := suggest.Closest(k.Value, sections); s != "" {
				hint = fmt.Sprintf("; did you mean %q?", s)
			}
			errs = append(errs, fmt.Errorf("%s: line %d: unknown top-level key %q (known: %s)%s", name, k.Line, k.Value, strings.Join(sections, ", "), hint))
		case secs[k.Value] != nil:
			errs = append(errs, fmt.Errorf("%s: line %d: %s: given twice", name, k.Line, k.Value))
		default:
			secs[k.Value] = v
		}
	}
	return secs, errs
}

// kindOf names a node's kind for messages.
func kindOf(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return fmt.Sprintf("%q", n.Value)
}
