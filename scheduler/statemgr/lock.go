package statemgr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// lockRecord is the value of a TM lock entry.
type lockRecord struct {
	Owner    string        `json:"owner"`
	TTL      time.Duration `json:"ttl"`
	Acquired time.Time     `json:"acquired"`
}

// Lock is a held topology manager lock. It stays held while its holder
// calls Refresh (or runs KeepAlive) more often than its TTL; when the holder
// dies the server removes the entry once the TTL has passed since the last
// refresh, and another TM can take over. Methods are safe for concurrent
// use.
type Lock struct {
	s        *Store
	topology string
	owner    string
	ttl      time.Duration
	acquired time.Time
	// epoch is the revision the lock was acquired at: it grows with
	// every acquisition of the topology's lock (the bucket's revisions
	// only grow), so it orders the topology's managers in time.
	epoch uint64

	mu       sync.Mutex
	rev      uint64
	released bool
	// heldUntil is when the lock may have expired on the server, less a
	// margin (heldFor): its last successful write's send time + heldFor.
	heldUntil time.Time
}

// heldFor is how long after a successful write (its send) the holder
// counts the lock as surely held: the TTL less a fifth. The server
// expires it a TTL after it applied the write, which is later; the
// margin covers the two clocks' rates and the write's way there, so a
// holder that cannot refresh stops acting before another can acquire.
func heldFor(ttl time.Duration) time.Duration { return ttl - ttl/5 }

// HeldUntil is the time until which the lock is surely held, if it is
// not refreshed again (see KeepAlive).
func (l *Lock) HeldUntil() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return time.Time{}
	}
	return l.heldUntil
}

// Topology returns the topology the lock is for.
func (l *Lock) Topology() string { return l.topology }

// Epoch is the lock's revision when it was acquired: a later manager of
// the topology (after a takeover) holds a larger one. Whatever a manager
// starts carries its epoch, so that what an earlier one started can be
// told apart and fenced (scheduler/internal/placement).
func (l *Lock) Epoch() uint64 { return l.epoch }

// Owner returns the owner string given to AcquireTMLock.
func (l *Lock) Owner() string { return l.owner }

// TTL returns the lock's time to live (the requested TTL rounded up to whole
// seconds).
func (l *Lock) TTL() time.Duration { return l.ttl }

// lockTTL validates ttl and rounds it up to whole seconds: JetStream
// per-message TTLs have a resolution and a minimum of one second.
func lockTTL(topology string, ttl time.Duration) (time.Duration, error) {
	if ttl < time.Second {
		return 0, fmt.Errorf("statemgr: TM lock of topology %q: ttl %s is below the 1s minimum: %w", topology, ttl, ErrInvalid)
	}
	return (ttl + time.Second - 1).Truncate(time.Second), nil
}

// AcquireTMLock makes owner the topology manager of a topology that exists.
// owner identifies the holder to others (TMLocation, error messages) and
// must be unique per live process, e.g. "tm@host:pid" or the TM's NATS
// subject. The entry is created only if absent and expires ttl (at least
// 1s, rounded up to whole seconds) after the last Refresh.
//
// If another owner holds it the error matches ErrLocked and names the
// holder. If the same owner holds it (a restarted process with a stable
// identity) the lock is taken over under a new revision, so a previous
// incarnation still refreshing it gets ErrLockLost.
//
// On a replicated store a try the cluster does not answer (an election,
// a lost reply) is made again: acquiring is safe to repeat, since a lock
// this owner already holds is taken over.
//
// The new manager's epoch is recorded (the <topology>.manager key of the
// lock bucket, which has no TTL and is read from its leader on a
// cluster) before the lock is
// returned, so that a manager that lost the lock can tell, when it
// acquires it again (Reacquire), whether another one ran the topology
// meanwhile.
func (s *Store) AcquireTMLock(ctx context.Context, topology, owner string, ttl time.Duration) (*Lock, error) {
	return bounded(ctx, s.replicas, func(ctx context.Context) (*Lock, error) {
		l, err := s.acquireTMLock(ctx, topology, owner, ttl)
		if err != nil {
			return nil, err
		}
		if err := s.recordManager(ctx, l); err != nil {
			_ = l.Release(ctx)
			return nil, err
		}
		return l, nil
	})
}

// managerKey is the lock bucket's key of the epoch of the topology's
// latest manager. The dot keeps it apart from the locks, whose keys are
// topology names (which have no dots).
func managerKey(topology string) string { return topology + ".manager" }

// recordManager stores l's epoch as the topology's manager's. The write
// must land while l is surely held (HeldUntil): the server then applied
// it before the lock could expire, so a manager that acquires the lock
// after l's reads it.
func (s *Store) recordManager(ctx context.Context, l *Lock) error {
	if _, err := s.locks.Put(ctx, managerKey(l.topology), strconv.AppendUint(nil, l.epoch, 10)); err != nil {
		return fmt.Errorf("statemgr: TM lock of topology %q: recording the manager's epoch %d: %w", l.topology, l.epoch, err)
	}
	if !time.Now().Before(l.HeldUntil()) {
		return fmt.Errorf("statemgr: TM lock of topology %q: the manager's epoch %d was recorded after the lock may have expired: %w", l.topology, l.epoch, ErrLockLost)
	}
	return nil
}

// Reacquire acquires the lock again for the manager that held l and
// lost it (l was not refreshed in time: the store did not answer), as
// AcquireTMLock does, and keeps l's epoch: the containers that manager
// started stay its own. If another manager acquired the topology's lock
// after l (and so may have run the topology: placed its containers
// elsewhere, restored a checkpoint, stored newer ones), even one that
// lost it again since, the lock is given back and the error matches
// ErrLocked: l's manager must step down, and the topology's next
// manager starts afresh from what is stored.
func (l *Lock) Reacquire(ctx context.Context) (*Lock, error) {
	s := l.s
	return bounded(ctx, s.replicas, func(ctx context.Context) (*Lock, error) {
		nl, err := s.acquireTMLock(ctx, l.topology, l.owner, l.ttl)
		if err != nil {
			return nil, err
		}
		e, err := s.locks.Get(ctx, managerKey(l.topology))
		switch {
		case notFound(err):
			// Recorded by no manager (a store from before the record): no
			// other manager can have run the topology under this code.
		case err != nil:
			_ = nl.Release(ctx)
			return nil, fmt.Errorf("statemgr: TM lock of topology %q: reading the manager's epoch: %w", l.topology, err)
		default:
			cur, perr := strconv.ParseUint(string(e.Value()), 10, 64)
			if perr != nil || cur != l.epoch {
				_ = nl.Release(ctx)
				return nil, fmt.Errorf("statemgr: TM lock of topology %q: another manager (epoch %s) has run the topology since this one (epoch %d) lost its lock: %w",
					l.topology, e.Value(), l.epoch, ErrLocked)
			}
		}
		nl.epoch = l.epoch
		return nl, nil
	})
}

func (s *Store) acquireTMLock(ctx context.Context, topology, owner string, ttl time.Duration) (*Lock, error) {
	if owner == "" {
		return nil, fmt.Errorf("statemgr: TM lock of topology %q: empty owner: %w", topology, ErrInvalid)
	}
	ttl, err := lockTTL(topology, ttl)
	if err != nil {
		return nil, err
	}
	if err := s.mustExist(ctx, topology, "acquiring TM lock"); err != nil {
		return nil, err
	}
	now := time.Now()
	v, err := json.Marshal(lockRecord{Owner: owner, TTL: ttl, Acquired: now})
	if err != nil {
		return nil, err
	}
	// A few rounds: the holder may release or expire between our Create
	// and our Get.
	for range 3 {
		rev, err := s.locks.Create(ctx, topology, v, jetstream.KeyTTL(ttl))
		if err == nil {
			s.log.Debug("TM lock acquired", "topology", topology, "owner", owner, "ttl", ttl, "revision", rev)
			return &Lock{s: s, topology: topology, owner: owner, ttl: ttl, acquired: now, rev: rev, epoch: rev, heldUntil: now.Add(heldFor(ttl))}, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return nil, fmt.Errorf("statemgr: acquiring TM lock of topology %q: %w", topology, err)
		}
		e, err := s.locks.Get(ctx, topology)
		if notFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("statemgr: acquiring TM lock of topology %q: reading holder: %w", topology, err)
		}
		holder, err := decodeLock(topology, e)
		if err != nil {
			return nil, err
		}
		if holder.Owner != owner {
			return nil, fmt.Errorf("statemgr: TM lock of topology %q is held by %q (acquired %s, ttl %s): %w",
				topology, holder.Owner, holder.Acquired.Format(time.RFC3339), holder.TTL, ErrLocked)
		}
		rev, err = s.writeLock(ctx, topology, v, e.Revision(), ttl)
		if isWrongLastSeq(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("statemgr: taking over TM lock of topology %q: %w", topology, err)
		}
		s.log.Debug("TM lock taken over from a previous incarnation", "topology", topology, "owner", owner, "revision", rev)
		return &Lock{s: s, topology: topology, owner: owner, ttl: ttl, acquired: now, rev: rev, epoch: rev, heldUntil: now.Add(heldFor(ttl))}, nil
	}
	return nil, fmt.Errorf("statemgr: TM lock of topology %q: contended, try again: %w", topology, ErrLocked)
}

// TMLocation returns the owner of the topology's TM lock; ErrNotFound if no
// TM holds it.
func (s *Store) TMLocation(ctx context.Context, topology string) (string, error) {
	if err := checkTopologyName(topology); err != nil {
		return "", err
	}
	e, err := s.locks.Get(ctx, topology)
	if notFound(err) {
		return "", fmt.Errorf("statemgr: no topology manager holds the lock of topology %q: %w", topology, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("statemgr: reading TM lock of topology %q: %w", topology, err)
	}
	r, err := decodeLock(topology, e)
	if err != nil {
		return "", err
	}
	return r.Owner, nil
}

// Refresh restarts the lock's TTL. If the lock expired, was released, or
// was taken by someone else or deleted with its topology, nothing is
// written and the error matches ErrLockLost: the caller is no longer the
// topology manager and must stop acting as one.
func (l *Lock) Refresh(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return fmt.Errorf("statemgr: TM lock of topology %q was released: %w", l.topology, ErrLockLost)
	}
	v, err := json.Marshal(lockRecord{Owner: l.owner, TTL: l.ttl, Acquired: l.acquired})
	if err != nil {
		return err
	}
	sent := time.Now()
	rev, err := l.s.writeLock(ctx, l.topology, v, l.rev, l.ttl)
	if isWrongLastSeq(err) {
		return l.lostLocked(ctx)
	}
	if err != nil {
		return fmt.Errorf("statemgr: refreshing TM lock of topology %q: %w", l.topology, err)
	}
	l.rev = rev
	l.heldUntil = sent.Add(heldFor(l.ttl))
	return nil
}

// Release gives the lock up so that another TM can acquire it at once.
// If the lock was already lost the error matches ErrLockLost and the
// current holder's entry is left alone.
func (l *Lock) Release(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return nil
	}
	err := l.s.locks.Purge(ctx, l.topology, jetstream.LastRevision(l.rev), jetstream.PurgeTTL(lockMarkerTTL))
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || isWrongLastSeq(err) {
		l.released = true
		return l.lostLocked(ctx)
	}
	if err != nil {
		return fmt.Errorf("statemgr: releasing TM lock of topology %q: %w", l.topology, err)
	}
	l.released = true
	l.s.log.Debug("TM lock released", "topology", l.topology, "owner", l.owner)
	return nil
}

// KeepAlive refreshes the lock every third of its TTL until ctx ends
// (returning nil) or the lock is lost (returning an error matching
// ErrLockLost). A refresh that fails for another reason (a server
// briefly unreachable, an election) is retried at the next tick; each is
// bounded by HeldUntil, and once that has passed without a successful
// refresh the lock is considered lost: before the server can expire it
// and another TM acquire it (HeldUntil keeps a fifth of the TTL spare).
func (l *Lock) KeepAlive(ctx context.Context) error {
	every := l.ttl / 3
	for {
		until := l.HeldUntil()
		wait := min(every, time.Until(until))
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
		}
		if !time.Now().Before(until) {
			return fmt.Errorf("statemgr: TM lock of topology %q not refreshed for %s (%s less a margin): %w", l.topology, heldFor(l.ttl), l.ttl, ErrLockLost)
		}
		rctx, cancel := context.WithDeadline(ctx, until)
		err := l.Refresh(rctx)
		cancel()
		switch {
		case err == nil:
		case errors.Is(err, ErrLockLost):
			return err
		case ctx.Err() != nil:
			return nil
		default:
			l.s.log.Warn("refreshing TM lock failed, retrying", "topology", l.topology, "err", err)
		}
	}
}

// lostLocked builds the ErrLockLost error naming who holds the lock now.
// l.mu is held.
func (l *Lock) lostLocked(ctx context.Context) error {
	who := "nobody (it expired or was deleted)"
	if e, err := l.s.locks.Get(ctx, l.topology); err == nil {
		if r, err := decodeLock(l.topology, e); err == nil {
			who = fmt.Sprintf("%q", r.Owner)
		}
	}
	l.s.log.Debug("TM lock lost", "topology", l.topology, "owner", l.owner, "holder", who)
	return fmt.Errorf("statemgr: TM lock of topology %q held by %q is lost, now held by %s: %w", l.topology, l.owner, who, ErrLockLost)
}

// writeLock stores a lock value with a fresh TTL if the key's last revision
// is rev. kv.Update cannot do this: it writes without a TTL, which would
// make the entry permanent.
func (s *Store) writeLock(ctx context.Context, topology string, v []byte, rev uint64, ttl time.Duration) (uint64, error) {
	m := &nats.Msg{Subject: "$KV." + s.locks.Bucket() + "." + topology, Data: v}
	ack, err := s.js.PublishMsg(ctx, m, jetstream.WithExpectLastSequencePerSubject(rev), jetstream.WithMsgTTL(ttl))
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

func decodeLock(topology string, e jetstream.KeyValueEntry) (lockRecord, error) {
	var r lockRecord
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		return r, fmt.Errorf("statemgr: TM lock of topology %q: decoding revision %d: %w", topology, e.Revision(), err)
	}
	return r, nil
}

// isWrongLastSeq reports whether err is JetStream's "wrong last sequence"
// (a failed revision check): code 10071, or 10164 on replicated streams.
func isWrongLastSeq(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}

// WatchTMLocks sends the name of each topology whose TM lock goes away
// from now on: released, removed, or expired because its holder stopped
// refreshing it (a daemon, or a cluster's node, that died). A topology
// manager elsewhere may then take it (AcquireTMLock decides which). The
// channel is closed when ctx ends or the watch fails; the sends block
// while the receiver is busy, so a slow receiver delays, never drops.
func (s *Store) WatchTMLocks(ctx context.Context) (<-chan string, error) {
	w, err := s.locks.WatchAll(ctx, jetstream.UpdatesOnly())
	if err != nil {
		return nil, fmt.Errorf("statemgr: watch the TM locks of tenant %q: %w", s.tenant, err)
	}
	out := make(chan string)
	go func() {
		defer close(out)
		defer func() { _ = w.Stop() }()
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-w.Updates():
				if !ok {
					return
				}
				if e == nil || (e.Operation() != jetstream.KeyValueDelete && e.Operation() != jetstream.KeyValuePurge) ||
					strings.Contains(e.Key(), ".") { // a managerKey, not a lock

					continue
				}
				select {
				case out <- e.Key():
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out, nil
}
