//go:build wasip1

// Command probe_spout is the Go SDK's conformance spout
// (wasm-sdk/conformance/SPEC.md). Build (wasm-sdk/go/testdata/build.sh):
//
//	GOOS=wasip1 GOARCH=wasm go build -trimpath -buildmode=c-shared -o wasm-sdk/go/testdata/probe_spout.wasm ./wasm-sdk/go/testdata/probe_spout
package main

import (
	"fmt"
	"strconv"

	ardea "github.com/ardea-dev/ardea/wasm-sdk/go"
)

type probe struct {
	ardea.BaseSpout
	ctx    *ardea.Context
	count  uint64
	next   uint64   // last new tuple emitted
	replay []uint64 // failed ids waiting to be emitted again
}

func (p *probe) Open(ctx *ardea.Context) error {
	p.ctx = ctx
	n, err := ctx.ConfigInt("count", 5)
	if err != nil {
		return err
	}
	p.count = uint64(n)
	ctx.Logger().Info(fmt.Sprintf("opened %s task %d", ctx.Component(), ctx.TaskID()))
	return nil
}

func (p *probe) Next(c *ardea.SpoutCollector) (ardea.Status, error) {
	for c.Remaining() > 0 && len(p.replay) > 0 {
		id := p.replay[0]
		p.replay = p.replay[1:]
		c.EmitWithID(id, "w"+strconv.FormatUint(id, 10), int64(id))
	}
	for c.Remaining() > 0 && p.next < p.count {
		p.next++
		c.EmitWithID(p.next, "w"+strconv.FormatUint(p.next, 10), int64(p.next))
	}
	if p.next >= p.count && len(p.replay) == 0 {
		return ardea.Done, nil
	}
	return ardea.More, nil
}

func (p *probe) Ack(id uint64)  { p.ctx.Metric("probe.acked", 1) }
func (p *probe) Fail(id uint64) { p.replay = append(p.replay, id) }
func (p *probe) Activate()      { p.ctx.Logger().Info("activated") }
func (p *probe) Deactivate()    { p.ctx.Logger().Info("deactivated") }

func init() { ardea.RegisterSpout(&probe{}) }

func main() {}
