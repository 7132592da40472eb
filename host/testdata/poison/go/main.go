//go:build wasip1

// Command go is the poison bolt with the Go SDK: it upper-cases field 0
// ("line") and emits it anchored (the SDK acks the line); a line holding
// "poison" panics, which the SDK reports with its message and source
// location, and the host fails that tuple (the SDK exports ardea_cursor).
// Build: host/testdata/poison/build.sh.
package main

import (
	"strings"

	ardea "github.com/ardea-dev/ardea/wasm-sdk/go"
)

type upper struct{ ardea.BaseBolt }

func (upper) Execute(t ardea.Tuple, c *ardea.BoltCollector) error {
	line := t.String(0)
	if strings.Contains(line, "poison") {
		panic("poison tuple: " + line)
	}
	c.EmitAnchored(t, strings.ToUpper(line))
	return nil
}

// A module built with -buildmode=c-shared runs init functions, not main.
func init() { ardea.RegisterBolt(upper{}) }

func main() {}
