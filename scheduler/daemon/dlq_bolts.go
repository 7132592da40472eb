package daemon

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/scheduler/container"
	"github.com/ardea-dev/ardea/scheduler/settings"
)

// boltDeadLetters lists the dead letters of top's wasm bolts (of only, if
// set), read from where tenant's policy places them
// (settings.MachinePolicy.BoltDeadLetter: a confined tenant's are in the
// daemon's place in its space), each file read bounded
// (settings.MaxDeadLetterBytes). found says whether only names one of
// those bolts.
func (d *Daemon) boltDeadLetters(tenant string, top *ardea.Topology, only string) (dl []connectors.DeadLetter, found bool, err error) {
	p := d.machinePolicy(tenant)
	for _, c := range top.Components {
		if c.Kind != ardea.Bolt || c.ModuleKind() == ardea.ModuleBuiltin || (only != "" && c.Name != only) {
			continue
		}
		found = found || only != ""
		path, err := p.BoltDeadLetter(top, c)
		if err != nil {
			return nil, found, err
		}
		if path == "" && only != "" {
			return nil, found, fmt.Errorf("component %q: %w (a wasm bolt keeps them effectively once, with %s set)", c.Name, connectors.ErrNoDeadLetters, settings.KeyDeadLetter)
		}
		if path == "" {
			continue
		}
		b, err := settings.ReadDeadLetters(path)
		if err != nil {
			return nil, found, fmt.Errorf("component %s: %w", c.Name, err)
		}
		for n, line := range bytes.Split(b, []byte("\n")) {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			var rec container.BoltDeadLetter
			if err := json.Unmarshal(line, &rec); err != nil {
				return nil, found, fmt.Errorf("component %s: dead letters line %d: %w", c.Name, n+1, err)
			}
			dl = append(dl, connectors.DeadLetter{Component: c.Name, Destination: "bolt dead letters",
				Source: "tuple " + rec.Hash, Error: rec.Error, Value: rec.Tuple})
		}
	}
	return dl, found, nil
}
