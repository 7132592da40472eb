//go:build !wasip1

package ardea

import (
	"fmt"

	"github.com/ardea-dev/ardea/wasm-sdk/go/internal/bridge"
)

// The test harness (package ardeatest) drives a runtime of its own through
// internal/bridge, natively; a guest carries none of this.

func init() {
	bridge.New = func(h bridge.Host, component any, decls any) bridge.Runtime {
		ds, _ := decls.([]Declaration)
		r := newRuntime(hostAdapter{h})
		switch c := component.(type) {
		case Bolt:
			r.register(nil, c, ds)
		case Spout:
			r.register(c, nil, ds)
		default:
			panic(fmt.Sprintf("ardea: %T is neither an ardea.Spout nor an ardea.Bolt", component))
		}
		return harnessRuntime{r}
	}
	bridge.Registered = func() (any, any) {
		switch {
		case global.bolt != nil:
			return global.bolt, global.decls
		case global.spout != nil:
			return global.spout, global.decls
		}
		return nil, nil
	}
}

// hostAdapter is a bridge.Host as the runtime's hostAPI.
type hostAdapter struct{ h bridge.Host }

func (a hostAdapter) emit(ops []byte)                           { a.h.Emit(ops) }
func (a hostAdapter) log(level int32, msg string)               { a.h.Log(level, msg) }
func (a hostAdapter) error(msg string)                          { a.h.Error(msg) }
func (a hostAdapter) stateGet(key string, buf []byte) int32     { return a.h.StateGet(key, buf) }
func (a hostAdapter) stateWrite(ops []byte)                     { a.h.StateWrite(ops) }
func (a hostAdapter) stateScan(prefix string, buf []byte) int32 { return a.h.StateScan(prefix, buf) }
func (a hostAdapter) metric(name string, delta int64)           { a.h.Metric(name, delta) }
func (a hostAdapter) gauge(name string, value float64)          { a.h.Gauge(name, value) }
func (a hostAdapter) observe(name string, value int64)          { a.h.Observe(name, value) }
func (a hostAdapter) observeMany(name string, values []int64)   { a.h.ObserveMany(name, values) }
func (a hostAdapter) now() int64                                { return a.h.Now() }

// harnessRuntime is a runtime as a bridge.Runtime.
type harnessRuntime struct{ r *runtime }

func (x harnessRuntime) Buffer(size int32) []byte { return x.r.buffer(size) }
func (x harnessRuntime) Open(n int32) int32       { return x.r.open(n) }
func (x harnessRuntime) Prepare(n int32) int32    { return x.r.prepare(n) }
func (x harnessRuntime) Next(max int32) int32     { return x.r.next(max) }
func (x harnessRuntime) Ack(n int32) int32        { return x.r.ackFailIDs(n, false) }
func (x harnessRuntime) Fail(n int32) int32       { return x.r.ackFailIDs(n, true) }
func (x harnessRuntime) Activate() int32          { return x.r.activate(true) }
func (x harnessRuntime) Deactivate() int32        { return x.r.activate(false) }
func (x harnessRuntime) Execute(n int32) int32    { return x.r.execute(n) }
func (x harnessRuntime) Tick() int32              { return x.r.tick() }
func (x harnessRuntime) Finish() int32            { return x.r.finish() }
func (x harnessRuntime) Close() int32             { return x.r.close() }
func (x harnessRuntime) Cursor() uint32           { return x.r.cursor }
func (x harnessRuntime) Manifest() []byte         { return x.r.manifestBlob()[4:] }
func (x harnessRuntime) Bolt() bool               { return x.r.bolt != nil }
func (x harnessRuntime) Reads() []string          { return x.r.manifest.inputs }
func (x harnessRuntime) Outputs() (names []string, fields [][]string) {
	for _, o := range x.r.manifest.outputs {
		names = append(names, o.Name)
		fields = append(fields, o.Fields)
	}
	return names, fields
}
