// Package bridge connects package ardea's runtime to the test harness
// (ardeatest) and the fake host (internal/fakehost) without exporting the
// runtime from package ardea: ardea sets New and Registered when it is
// built natively (never in a guest).
package bridge

// Host is the host's side of the ABI (the "ardea" import module).
// Slices passed in are valid only during the call.
type Host interface {
	Emit(ops []byte)
	Log(level int32, msg string)
	Error(msg string)
	StateGet(key string, buf []byte) int32
	StateWrite(ops []byte)
	StateScan(prefix string, buf []byte) int32
	Metric(name string, delta int64)
	Gauge(name string, value float64)
	Observe(name string, value int64)
	ObserveMany(name string, values []int64)
	Now() int64
}

// Runtime is one module instance's exports, called as the host calls
// them: inputs go into Buffer first.
type Runtime interface {
	Buffer(size int32) []byte
	Open(n int32) int32
	Prepare(n int32) int32
	Next(max int32) int32
	Ack(n int32) int32
	Fail(n int32) int32
	Activate() int32
	Deactivate() int32
	Execute(n int32) int32
	Tick() int32
	Finish() int32
	Close() int32
	Cursor() uint32
	Manifest() []byte
	// Bolt reports whether the component is a bolt.
	Bolt() bool
	// Outputs and Inputs are the declared output streams (name, fields)
	// and read fields; nil if not declared.
	Outputs() (names []string, fields [][]string)
	Reads() []string
}

// New returns a runtime for component (an ardea.Spout or ardea.Bolt)
// registered with decls ([]ardea.Declaration) on host h. It panics like
// RegisterSpout and RegisterBolt on bad declarations.
var New func(h Host, component any, decls any) Runtime

// Registered returns the component the module registered (from an init
// function) and its declarations, or nil.
var Registered func() (component any, decls any)
