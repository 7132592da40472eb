// Package objread reads a JetStream object store's object whole with direct
// gets of its chunks, checking them against the object's metadata.
//
// nats.go's ObjectStore.Get reads through an ordered push consumer whose
// callback writes each chunk into a pipe. When creating that consumer fails
// on the client's side (a timeout under load) after the server made it,
// the chunk it already pushed blocks the callback on a pipe no one reads,
// and the subscription's goroutine is left for good. Direct gets make no
// consumer: a read is request-reply, chunk by chunk, and ends with the
// caller's context. A chunk the server dropped (damaged in its files, or
// never stored by a failed write) is an error rather than a wait until
// the context ends: at once on a stream of one replica; on a replicated
// one once it is still missing after replicaLag, since any replica
// answers a direct get and one that has not applied a write yet answers
// as if it had not happened (an object just written, read back by its
// writer: the checkpoint store's check of a save).
package objread

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrDamaged: an object's chunks are missing or do not match its metadata
// (count, size or SHA-256).
var ErrDamaged = errors.New("object damaged")

// Stream is the part of jetstream.Stream a read uses.
type Stream interface {
	GetMsg(ctx context.Context, seq uint64, opts ...jetstream.GetMsgOpt) (*jetstream.RawStreamMsg, error)
}

// replicaLag bounds how long Read asks again for a chunk a replica of a
// replicated stream does not have (yet): replicas catch up in
// milliseconds; a chunk still missing after it is gone.
const replicaLag = 2 * time.Second

// replicated reports whether s is a stream of more than one replica
// (a jetstream.Stream's cached info says).
func replicated(s Stream) bool {
	c, ok := s.(interface{ CachedInfo() *jetstream.StreamInfo })
	if !ok {
		return false
	}
	info := c.CachedInfo()
	return info != nil && info.Config.Replicas > 1
}

// getChunk is the message at or after seq on subj; on a replicated
// stream a message not found is asked for again (a lagging replica may
// have answered) until replicaLag has passed.
func getChunk(ctx context.Context, s Stream, seq uint64, subj string) (*jetstream.RawStreamMsg, error) {
	m, err := s.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subj))
	if !errors.Is(err, jetstream.ErrMsgNotFound) || !replicated(s) {
		return m, err
	}
	deadline := time.Now().Add(replicaLag)
	wait := 5 * time.Millisecond
	for errors.Is(err, jetstream.ErrMsgNotFound) && time.Now().Before(deadline) {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, 100*time.Millisecond)
		m, err = s.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subj))
	}
	return m, err
}

// Read returns the content of the object info describes, stored in bucket
// (whose stream is OBJ_<bucket>), checked against info's chunk count, size
// and digest; an error wrapping ErrDamaged if they do not check out.
func Read(ctx context.Context, s Stream, bucket string, info *jetstream.ObjectInfo) ([]byte, error) {
	subj := "$O." + bucket + ".C." + info.NUID
	buf := make([]byte, 0, info.Size)
	h := sha256.New()
	seq := uint64(1)
	for n := range info.Chunks {
		m, err := getChunk(ctx, s, seq, subj)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil, fmt.Errorf("%w: %d of its %d chunks can be read from stream OBJ_%s (the server drops a record it finds damaged in its files)", ErrDamaged, n, info.Chunks, bucket)
		}
		if err != nil {
			return nil, fmt.Errorf("chunk %d of %d: %w", n+1, info.Chunks, err)
		}
		if uint64(len(buf))+uint64(len(m.Data)) > info.Size {
			return nil, fmt.Errorf("%w: more than the %d bytes its metadata says in its first %d chunks", ErrDamaged, info.Size, n+1)
		}
		buf = append(buf, m.Data...)
		h.Write(m.Data)
		seq = m.Sequence + 1
	}
	if uint64(len(buf)) != info.Size {
		return nil, fmt.Errorf("%w: %d bytes in its chunks, its metadata says %d", ErrDamaged, len(buf), info.Size)
	}
	if want := "SHA-256=" + base64.URLEncoding.EncodeToString(h.Sum(nil)); want != info.Digest {
		return nil, fmt.Errorf("%w: SHA-256 of its chunks %s, its metadata says %s", ErrDamaged, want, info.Digest)
	}
	return buf, nil
}

// Get reads object name of store (bucket's, through stream s) whole: its
// metadata, then Read. A missing or deleted object is
// jetstream.ErrObjectNotFound.
func Get(ctx context.Context, store jetstream.ObjectStore, s Stream, bucket, name string) ([]byte, error) {
	info, err := store.GetInfo(ctx, name)
	if err != nil {
		return nil, err
	}
	return Read(ctx, s, bucket, info)
}
