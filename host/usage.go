package host

import "time"

// Usage is what an instance reports for metrics.
type Usage struct {
	MemoryPages      uint32        // linear memory in use, 64 KiB pages
	MemoryLimitPages uint32        // the cap
	Instantiate      time.Duration // instantiation and _initialize
	Compile          time.Duration // compiling its module (0: from the cache)
	// LogDroppedLines and LogDroppedBytes count the guest's log lines
	// (log calls, stdout, stderr) dropped over log.max.bytes.per.second
	// since the instance started.
	LogDroppedLines, LogDroppedBytes int64
}

// UsageOf reports a spout's or bolt's usage if it is a wasm instance.
func UsageOf(c any) (Usage, bool) {
	var in *instance
	switch v := c.(type) {
	case *spout:
		in = v.in
	case *bolt:
		in = v.live.Load()
	default:
		return Usage{}, false
	}
	return Usage{MemoryPages: in.pagesUsed.Load(), MemoryLimitPages: in.pages,
		Instantiate: in.instantiate, Compile: in.module.c.compileTime,
		LogDroppedLines: in.logs.droppedLines.Load(), LogDroppedBytes: in.logs.droppedBytes.Load()}, true
}
