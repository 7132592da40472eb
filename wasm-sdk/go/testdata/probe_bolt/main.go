//go:build wasip1

// Command probe_bolt is the Go SDK's conformance bolt
// (wasm-sdk/conformance/SPEC.md). Build (wasm-sdk/go/testdata/build.sh):
//
//	GOOS=wasip1 GOARCH=wasm go build -trimpath -buildmode=c-shared -o wasm-sdk/go/testdata/probe_bolt.wasm ./wasm-sdk/go/testdata/probe_bolt
package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	ardea "github.com/ardea-dev/ardea/wasm-sdk/go"
)

type probe struct {
	ardea.BaseBolt
	ctx      *ardea.Context
	prefix   string
	ticks    int
	executed int
	prev     ardea.Tuple
	hasPrev  bool
}

func (p *probe) Prepare(ctx *ardea.Context) error {
	p.ctx = ctx
	p.prefix = ctx.ConfigOr("prefix", "")
	if ctx.ConfigOr("ack", "") == "manual" {
		ctx.ManualAck()
	}
	ctx.Logger().Info(fmt.Sprintf("prepared %s task %d of %d", ctx.Component(), ctx.TaskID(), ctx.Parallelism()))
	return nil
}

func (p *probe) execute(t, prev ardea.Tuple, hasPrev bool, c *ardea.BoltCollector) error {
	p.executed++
	w := t.String(0)
	switch {
	case w == "fail":
		c.Fail(t)
		return nil
	case w == "auto":
		c.Emit("auto", int64(0))
		return nil
	case w == "twice":
		c.Ack(t)
		c.Ack(t)
		return nil
	case w == "error":
		return errors.New("probe error: bad word")
	case w == "panic":
		panic("probe panic")
	case w == "log":
		p.ctx.Logger().Warn("probe log")
	case w == "config":
		var pairs []string
		for _, k := range p.ctx.ConfigKeys() {
			v, _ := p.ctx.Config(k)
			pairs = append(pairs, k+"="+v)
		}
		c.EmitAnchoredTo("events", t, "config", strings.Join(pairs, ","))
	case w == "scan":
		p.ctx.State().Scan("", func(k string, v []byte) bool {
			c.EmitAnchoredTo("events", t, "state", k+"="+strconv.FormatInt(int64(binary.LittleEndian.Uint64(v)), 10))
			return true
		})
	case strings.HasPrefix(w, "delete:"):
		k := strings.TrimPrefix(w, "delete:")
		p.ctx.State().Delete(k)
		c.EmitAnchoredTo("events", t, "deleted", k)
	case strings.HasPrefix(w, "direct:"):
		task, err := strconv.ParseUint(strings.TrimPrefix(w, "direct:"), 10, 32)
		if err != nil {
			return err
		}
		c.EmitDirectAnchored(uint32(task), "default", []ardea.Tuple{t}, w, int64(0))
	case w == "metrics":
		p.ctx.Gauge("probe.gauge", 2.5)
		p.ctx.Observe("probe.size", 7)
		p.ctx.Observe("probe.size", 1000)
		p.ctx.Metric("probe.words", 0)
	case w == "multi":
		anchors := []ardea.Tuple{t}
		if hasPrev {
			anchors = append(anchors, prev)
		}
		c.EmitMultiAnchored("default", anchors, "multi", int64(2))
	default:
		n := p.ctx.State().AddInt(w, 1)
		c.EmitAnchored(t, p.prefix+w, n)
		p.ctx.Metric("probe.words", 1)
	}
	c.Ack(t)
	return nil
}

// Execute sees one tuple at a time; the previous tuple this
// task executed is kept (copied) for "multi".
func (p *probe) Execute(t ardea.Tuple, c *ardea.BoltCollector) error {
	err := p.execute(t, p.prev, p.hasPrev, c)
	p.prev, p.hasPrev = t.Copy(), true
	return err
}

func (p *probe) Tick(c *ardea.BoltCollector) error {
	p.ticks++
	c.EmitTo("events", "tick", strconv.Itoa(p.ticks))
	return nil
}

func (p *probe) Finish(c *ardea.BoltCollector) error {
	c.EmitTo("events", "finish", strconv.Itoa(p.executed))
	return nil
}

func init() { ardea.RegisterBolt(&probe{}) }

func main() {}
