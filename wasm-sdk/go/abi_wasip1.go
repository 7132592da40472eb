//go:build wasip1

package ardea

// The ABI glue: host imports (module "ardea") and the guest's exports. A
// Go string argument of a //go:wasmimport function is passed as (ptr, len).

import "unsafe"

//go:wasmimport ardea emit
func hostEmit(ptr unsafe.Pointer, n uint32)

//go:wasmimport ardea log
func hostLog(level int32, msg string)

//go:wasmimport ardea error
func hostError(msg string)

//go:wasmimport ardea state_get
func hostStateGet(key string, vptr unsafe.Pointer, vcap uint32) int32

//go:wasmimport ardea state_write
func hostStateWrite(ptr unsafe.Pointer, n uint32)

//go:wasmimport ardea state_scan
func hostStateScan(prefix string, bptr unsafe.Pointer, bcap uint32) int32

//go:wasmimport ardea metric
func hostMetric(name string, delta int64)

//go:wasmimport ardea gauge
func hostGauge(name string, value float64)

//go:wasmimport ardea observe
func hostObserve(name string, value int64)

//go:wasmimport ardea observe_many
func hostObserveMany(name string, vptr unsafe.Pointer, count uint32)

//go:wasmimport ardea now
func hostNow() int64

func ptr(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }

type wasmHost struct{}

func (wasmHost) emit(ops []byte)             { hostEmit(ptr(ops), uint32(len(ops))) }
func (wasmHost) log(level int32, msg string) { hostLog(level, msg) }
func (wasmHost) error(msg string)            { hostError(msg) }
func (wasmHost) stateGet(key string, buf []byte) int32 {
	return hostStateGet(key, ptr(buf), uint32(len(buf)))
}
func (wasmHost) stateWrite(ops []byte) { hostStateWrite(ptr(ops), uint32(len(ops))) }
func (wasmHost) stateScan(prefix string, buf []byte) int32 {
	return hostStateScan(prefix, ptr(buf), uint32(len(buf)))
}
func (wasmHost) metric(name string, delta int64)  { hostMetric(name, delta) }
func (wasmHost) gauge(name string, value float64) { hostGauge(name, value) }
func (wasmHost) observe(name string, value int64) { hostObserve(name, value) }
func (wasmHost) observeMany(name string, values []int64) {
	hostObserveMany(name, unsafe.Pointer(unsafe.SliceData(values)), uint32(len(values)))
}
func (wasmHost) now() int64 { return hostNow() }

// global is the module's runtime. The input buffer it hands out stays
// reachable from it, and Go's garbage collector does not move objects, so
// the address the host caches stays valid.
var global = newRuntime(wasmHost{})

//go:wasmexport ardea_abi_version
func exportABIVersion() int32 { return ABIVersion }

//go:wasmexport ardea_buffer
func exportBuffer(size int32) unsafe.Pointer { return ptr(global.buffer(size)) }

//go:wasmexport ardea_open
func exportOpen(n int32) int32 { return global.open(n) }

//go:wasmexport ardea_prepare
func exportPrepare(n int32) int32 { return global.prepare(n) }

//go:wasmexport ardea_next
func exportNext(max int32) int32 { return global.next(max) }

//go:wasmexport ardea_ack
func exportAck(n int32) int32 { return global.ackFailIDs(n, false) }

//go:wasmexport ardea_fail
func exportFail(n int32) int32 { return global.ackFailIDs(n, true) }

//go:wasmexport ardea_activate
func exportActivate() int32 { return global.activate(true) }

//go:wasmexport ardea_deactivate
func exportDeactivate() int32 { return global.activate(false) }

//go:wasmexport ardea_execute
func exportExecute(n int32) int32 { return global.execute(n) }

//go:wasmexport ardea_tick
func exportTick() int32 { return global.tick() }

//go:wasmexport ardea_finish
func exportFinish() int32 { return global.finish() }

// ardea_cursor (ABI.md "A failing tuple"): the address of the index of
// the batch record ardea_execute is processing, which the host reads when
// the call fails or traps.
//
//go:wasmexport ardea_cursor
func exportCursor() unsafe.Pointer { return unsafe.Pointer(&global.cursor) }

// ardea_manifest (ABI.md "Manifest"): u32 length, then the component's
// manifest as JSON; valid until the next call into the guest.
//
//go:wasmexport ardea_manifest
func exportManifest() unsafe.Pointer {
	global.manifestBuf = global.manifestBlob()
	return ptr(global.manifestBuf)
}

//go:wasmexport ardea_close
func exportClose() int32 { return global.close() }
