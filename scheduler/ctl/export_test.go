package ctl

// For the external tests (package ctl_test, which imports scheduler/api and
// so cannot be package ctl).
var (
	MetricsSubject = metricsSubject
	DecodeRequest  = decodeRequest
)
