package metrics

// Names of the metrics Ardea adds to Heron's (Heron's own are above, in
// metrics.go).
const (
	WasmMemoryPages      = "__wasm-memory-pages"
	WasmMemoryPagesLimit = "__wasm-memory-pages-limit"
	InstantiateTime      = "__instantiate-time-ms"
	CompileTime          = "__compile-time-ms"
	LogDroppedLines      = "__log-dropped-lines"
	LogDroppedBytes      = "__log-dropped-bytes"
	// ProcessLatencyP99 is the 99th percentile of ProcessLatency over the
	// interval (log2 buckets, interpolated inside one: within a factor of
	// 2); a mean hides the tail a noisy neighbour adds.
	ProcessLatencyP99 = "__process-latency-p99"
	TuplesSent        = "__tuples-sent"
	BytesSent         = "__bytes-sent"
	TuplesReceived    = "__tuples-received"
	BytesReceived     = "__bytes-received"
	DroppedTuples     = "__dropped-tuples"
	CreditWaits       = "__credit-waits"
	CPUSeconds        = "__cpu-seconds"
	RSSBytes          = "__rss-bytes"
	Goroutines        = "__goroutines"
	SinkDropped       = "__sink-dropped"
)

// Unit is what a metric's value counts or measures.
type Unit string

// Units of the catalog.
const (
	UnitTuples       Unit = "tuples"
	UnitCalls        Unit = "calls"
	UnitNanoseconds  Unit = "nanoseconds"
	UnitMilliseconds Unit = "milliseconds"
	UnitSeconds      Unit = "seconds"
	UnitBytes        Unit = "bytes"
	UnitPages        Unit = "pages"
	UnitLines        Unit = "lines"
	UnitMessages     Unit = "messages"
	UnitWaits        Unit = "waits"
	UnitGoroutines   Unit = "goroutines"
	UnitBatches      Unit = "batches"
)

// UCUM is the unit as OpenTelemetry writes it ("ns", "By", "{tuple}").
func (u Unit) UCUM() string {
	switch u {
	case UnitNanoseconds:
		return "ns"
	case UnitMilliseconds:
		return "ms"
	case UnitSeconds:
		return "s"
	case UnitBytes:
		return "By"
	}
	return "{" + string(u[:len(u)-1]) + "}" // "tuples" -> "{tuple}"
}

// Seconds is the factor that turns a value of u into seconds, and whether
// u is a time at all (Prometheus's base unit of time is the second).
func (u Unit) Seconds() (float64, bool) {
	switch u {
	case UnitNanoseconds:
		return 1e-9, true
	case UnitMilliseconds:
		return 1e-3, true
	case UnitSeconds:
		return 1, true
	}
	return 1, false
}

// Def describes one of Ardea's metrics: the one table its exporters
// (OpenTelemetry descriptions, Prometheus HELP lines) and docs/metrics.md
// are made from.
type Def struct {
	Name    string // Heron's name, e.g. "__execute-count"
	Counter bool   // cumulative since the instance started; else a gauge
	Unit    Unit
	Meaning string
}

// Catalog lists every metric Ardea's containers report, in the order
// docs/metrics.md shows them. User metrics (a guest's own) are not in it.
var Catalog = []Def{
	{EmitCount, true, UnitTuples, "tuples emitted, per output stream"},
	{ExecuteCount, true, UnitTuples, "tuples executed"},
	{AckCount, true, UnitTuples, "bolts: acks called; spouts: trees completed"},
	{FailCount, true, UnitTuples, "bolts: fails called; spouts: trees failed"},
	{TimeoutCount, true, UnitTuples, "spouts: trees timed out"},
	{NextTupleCount, true, UnitCalls, "spouts: Next calls"},
	{ExecuteLatency, false, UnitNanoseconds, "mean execute time per tuple over the interval"},
	{ProcessLatency, false, UnitNanoseconds, "mean time from the upstream emit to the end of its execution over the interval"},
	{ProcessLatencyP99, false, UnitNanoseconds, "99th percentile of the time from the upstream emit to the end of its execution over the interval, within a factor of 2"},
	{CompleteLatency, false, UnitNanoseconds, "spouts: mean time from emit to tree complete over the interval"},
	{BackPressureTime, true, UnitNanoseconds, "time waited on downstream, per instance and, under component __stmgr__, for all the container's instances"},
	{WasmMemoryPages, false, UnitPages, "wasm linear memory in use; a page is 64 KiB"},
	{WasmMemoryPagesLimit, false, UnitPages, "wasm linear memory cap; a page is 64 KiB"},
	{LogDroppedLines, true, UnitLines, "guest log lines dropped over log.max.bytes.per.second since the instance started"},
	{LogDroppedBytes, true, UnitBytes, "guest log bytes dropped over log.max.bytes.per.second since the instance started"},
	{InstantiateTime, false, UnitMilliseconds, "time the instance's instantiation took"},
	{CompileTime, false, UnitMilliseconds, "time compiling the instance's module took, 0 when it came from the cache"},
	{TuplesSent, true, UnitTuples, "tuple copies the container's instances sent, per peer: local or remote"},
	{BytesSent, true, UnitBytes, "batch bytes the container sent, per peer: local or remote"},
	{TuplesReceived, true, UnitTuples, "tuples received for the container's instances, per peer: local or remote"},
	{BytesReceived, true, UnitBytes, "batch bytes the container received, per peer: local or remote"},
	{DroppedTuples, true, UnitMessages, "messages dropped, NATS slow-consumer events and malformed ones; must stay 0"},
	{CreditWaits, true, UnitWaits, "sends that found a link out of credit and waited"},
	{CPUSeconds, true, UnitSeconds, "CPU time of the host process"},
	{RSSBytes, false, UnitBytes, "resident set size of the host process"},
	{Goroutines, false, UnitGoroutines, "goroutines of the host process"},
	{SinkDropped, true, UnitBatches, "batches a metrics sink dropped; label peer names the sink"},
}

var catalogIndex = func() map[string]*Def {
	m := make(map[string]*Def, len(Catalog))
	for i := range Catalog {
		m[Catalog[i].Name] = &Catalog[i]
	}
	return m
}()

// Describe returns the catalog's entry for a metric's Heron name.
func Describe(name string) (Def, bool) {
	d := catalogIndex[name]
	if d == nil {
		return Def{}, false
	}
	return *d, true
}
