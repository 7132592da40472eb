package sinks

import "time"

// redial is a remote sink's (Graphite, Scribe) connection back-off and the
// state of its current failure episode, owned by the sink's writer. The
// back-off doubles from min to max on each failed dial or send and resets
// only when the server answers, so a server that accepts and then resets
// is not dialled in a tight loop. An episode (from the first undelivered
// write to the next delivery) is logged once at each end.
type redial struct {
	min, max time.Duration
	backoff  time.Duration
	at       time.Time // no dial before
	failing  bool      // since the last delivery
	dropped  int64     // dropped since the last delivery
}

// wait is how long before the next dial may happen (0: now).
func (r *redial) wait(now time.Time) time.Duration {
	if d := r.at.Sub(now); d > 0 {
		return d.Round(time.Millisecond)
	}
	return 0
}

// failed schedules the next dial.
func (r *redial) failed(now time.Time) {
	r.backoff = min(max(2*r.backoff, r.min), r.max)
	r.at = now.Add(r.backoff)
}

// answered resets the back-off: the server responds.
func (r *redial) answered() { r.backoff = 0 }

// undelivered marks the episode; true the first time (log it).
func (r *redial) undelivered() bool {
	first := !r.failing
	r.failing = true
	return first
}

// dropping counts n dropped; true for the first drop of an episode.
func (r *redial) dropping(n int) bool {
	first := r.dropped == 0
	r.dropped += int64(n)
	return first
}

// delivered ends the episode and the back-off: whether one was going on
// and how many were dropped during it.
func (r *redial) delivered() (was bool, dropped int64) {
	was, dropped = r.failing, r.dropped
	r.failing, r.dropped, r.backoff = false, 0, 0
	return was, dropped
}
