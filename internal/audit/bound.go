package audit

import (
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"
)

// Bounds of one record: a call cannot make its record large (issue 30: a
// 500 KB path stored twice made each refused call a 1 MB record).
const (
	// MaxRecordBytes bounds a record as stored; one whose parameters
	// would make it larger keeps a note of their size instead of them.
	MaxRecordBytes = 16 << 10
	// maxPathBytes bounds the path, the target and the principal kept.
	maxPathBytes = 256
	// maxErrorBytes bounds the error message kept.
	maxErrorBytes = 1024
	// maxQueryParams bounds the query parameters kept, maxNameBytes
	// their names.
	maxQueryParams = 32
	maxNameBytes   = 64
)

// clip shortens s to n bytes, saying how long it was.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "...(" + strconv.Itoa(len(s)) + " bytes)"
}

// bound returns rec within the bounds above, and its encoding.
func bound(rec Record) (Record, []byte, error) {
	rec.Path = clip(rec.Path, maxPathBytes)
	rec.Action = Action(clip(string(rec.Action), maxPathBytes+16))
	rec.Target = clip(rec.Target, maxPathBytes)
	rec.Principal = clip(rec.Principal, maxPathBytes)
	rec.TokenID = clip(rec.TokenID, maxPathBytes)
	rec.Tenant = clip(rec.Tenant, maxPathBytes)
	rec.Method = clip(rec.Method, 16)
	rec.Source = clip(rec.Source, maxPathBytes)
	rec.Result.Error = clip(rec.Result.Error, maxErrorBytes)
	data, err := json.Marshal(rec)
	if err != nil {
		return rec, nil, err
	}
	if len(data) > MaxRecordBytes && rec.Params != nil {
		rec.Params = map[string]any{"truncated": fmt.Sprintf("the parameters were dropped: the record took %d bytes, over %d (audit.MaxRecordBytes)", len(data), MaxRecordBytes)}
		data, err = json.Marshal(rec)
	}
	return rec, data, err
}

// Refusals are recorded one by one up to a rate per tenant and source;
// past it they are counted, and one summary record per tenant, source and
// interval says how many were not recorded, with their status codes.
const (
	DefaultRefusedRate     = 1  // records per second, per tenant and source
	DefaultRefusedBurst    = 20 // records at once, per tenant and source
	DefaultSummaryInterval = time.Minute
	// maxRefusalSources bounds the tenants and sources tracked; past it
	// every new one's refusals are counted under the source "other".
	maxRefusalSources = 4096
)

// ActionRefusedSummary is the action of a summary of refused calls not
// recorded one by one.
const ActionRefusedSummary Action = "refused.summary"

type refusalKey struct{ tenant, source string }

type refusalBucket struct {
	tokens float64
	last   time.Time
}

type refusalSummary struct {
	first, last time.Time
	count       int
	codes       map[int]int
}

// refusals rate-limits refused calls' records and summarizes the rest.
type refusals struct {
	rate, burst float64
	interval    time.Duration

	mu       sync.Mutex
	buckets  map[refusalKey]*refusalBucket
	pending  map[refusalKey]*refusalSummary
	nextScan time.Time // due scans no sooner (a quarter interval apart)
}

func newRefusals(o Options) *refusals {
	return &refusals{rate: o.RefusedRate, burst: float64(o.RefusedBurst), interval: o.SummaryInterval,
		buckets: map[refusalKey]*refusalBucket{}, pending: map[refusalKey]*refusalSummary{}}
}

// sourceHost is the client's address without its port.
func sourceHost(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return clip(addr, 64)
}

// admit takes a record of a refused call: true if it is recorded, false
// if it is counted into its summary instead.
func (r *refusals) admit(rec Record, now time.Time) bool {
	k := refusalKey{tenant: rec.Tenant, source: sourceHost(rec.Source)}
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.buckets[k]
	if b == nil && len(r.buckets) < maxRefusalSources {
		b = &refusalBucket{tokens: r.burst, last: now}
		r.buckets[k] = b
	}
	if b == nil {
		k = refusalKey{source: "other"}
	} else {
		if dt := now.Sub(b.last).Seconds(); dt > 0 {
			b.tokens = min(r.burst, b.tokens+dt*r.rate)
		}
		b.last = now
		if b.tokens >= 1 {
			b.tokens--
			return true
		}
	}
	s := r.pending[k]
	if s == nil {
		s = &refusalSummary{first: now, codes: map[int]int{}}
		r.pending[k] = s
	}
	s.last = now
	s.count++
	s.codes[rec.Result.Code]++
	return false
}

// due takes the summaries whose interval has ended (all of them if all),
// as records, and forgets the buckets that have refilled.
func (r *refusals) due(now time.Time, all bool) []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !all && now.Before(r.nextScan) {
		return nil
	}
	r.nextScan = now.Add(r.interval / 4)
	var out []Record
	for k, s := range r.pending {
		if !all && now.Sub(s.first) < r.interval {
			continue
		}
		delete(r.pending, k)
		codes := map[string]any{}
		for c, n := range s.codes {
			codes[strconv.Itoa(c)] = n
		}
		out = append(out, Record{
			Time: s.first, Tenant: k.tenant, Action: ActionRefusedSummary, Source: k.source,
			Result: Result{Code: 429, Error: fmt.Sprintf(
				"%d refused calls from %s were not recorded one by one (over %g records/s, bursts of %g, per tenant and source) between %s and %s",
				s.count, k.source, r.rate, r.burst, s.first.Format(time.RFC3339), s.last.Format(time.RFC3339))},
			Params: map[string]any{"suppressed": s.count, "codes": codes, "until": s.last},
		})
	}
	for k, b := range r.buckets {
		if _, counting := r.pending[k]; !counting && b.tokens+now.Sub(b.last).Seconds()*r.rate >= r.burst {
			delete(r.buckets, k)
		}
	}
	return out
}
