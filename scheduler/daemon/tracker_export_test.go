package daemon

import "github.com/ardea-dev/ardea/scheduler/internal/trackersource"

// Tracker is the tracker's source the API serves (newTrackerSource):
// tests read a topology's info, metrics history and logs through it, as
// the tracker does, without the HTTP round trip.
func (d *Daemon) Tracker() *trackersource.Source { return newTrackerSource(d) }
