//go:build !linux

package peers

import "os"

// PeakRSS is not measured here (getrusage's unit differs by system).
func PeakRSS(*os.ProcessState) int64 { return 0 }
