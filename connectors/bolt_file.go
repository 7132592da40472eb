package connectors

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// The file bolt is a sink: it writes each input tuple as one line and emits
// nothing.
//
//	format tsv   fields separated by tabs. Strings are written raw with
//	             '\\', tab, newline and carriage return escaped as \\ \t \n \r;
//	             int64, float64 (shortest round-trip form) and bool are
//	             formatted; bytes are hex; null is empty.
//	format json  one JSON object per line, keyed by the field names the
//	             input's stream declares; bytes are base64 (as encoding/json
//	             does), NaN and infinities are the strings "NaN", "+Inf",
//	             "-Inf", invalid UTF-8 becomes U+FFFD.
//
// With parallelism > 1, task i writes "<path>.<i>". Parent directories are
// created. The file is truncated only at the topology's first start (not
// with append); a restarted task (plugin.TaskContext.Restarted: its
// container restarted, a re-plan, a resumed daemon) appends, after cutting
// off a last line the killed process left half written (endTornLine), so
// a restart never destroys acked output (docs/delivery.md, "Built-in
// components"). Output is buffered and flushed when the buffer fills, at Finish
// (which also syncs to disk) and Close, and at the first Execute or Tick
// after flush_interval has passed since the last flush.

func init() {
	register(plugin.RegisterBolt(plugin.Spec{
		Name: "file",
		Summary: "Writes every input tuple as a line of a file: tab-separated (`\\t \\n \\r \\\\` escaped) or a JSON object keyed by field name; with parallelism p, task i writes `<path>.<i>`. " +
			"The topology's first start truncates the file, a restarted task appends to it (a restart never destroys written lines). " +
			"At least once it acks a line once it is in the file; effectively once it truncates back to a checkpoint's length on a restore.",
		Fields: []plugin.Field{
			{Name: "path", Type: plugin.TypePath, Required: true, Doc: "file to write; task i of p > 1 writes <path>.<i>; relative to the topology file's directory"},
			{Name: "format", Type: plugin.TypeEnum, Default: "tsv", Enum: []string{"tsv", "json"}, Doc: "tsv: tab-separated fields; json: one object per line keyed by field name"},
			{Name: "flush_interval", Type: plugin.TypeDuration, Default: "1s", Min: "1ms", Doc: "longest time buffered output waits before it is written (checked on each batch and tick)"},
			{Name: "append", Type: plugin.TypeBool, Default: "false", Doc: "append to an existing file instead of truncating it at the topology's first start (a restart always appends)"},
		},
	}, newFileSink))
}

const fileSinkBuffer = 256 << 10

type fileSink struct {
	path     string
	json     bool
	interval time.Duration
	append   bool

	comp      string
	task      uint32
	now       func() time.Time // injectable clock for tests
	f         *os.File
	w         *bufio.Writer
	keys      [][][]byte // per input: JSON-quoted field names followed by ':'
	vals      []tuple.Value
	line      []byte
	lastFlush time.Time

	// written is the file's length once the buffer is flushed. Under
	// effectively once, Snapshot records it in the task state (lenKey), and
	// an instance restored from a checkpoint truncates the file back to it:
	// what the rolled-back tuples wrote is written again by their replay,
	// so the output is exact.
	written int64
	state   plugin.State
	lenKey  []byte
	lenBuf  [8]byte
	tracked []uint64 // at least once: tuple ids of the batch, acked once written
}

func newFileSink(cfg plugin.Config) (plugin.Bolt, error) {
	r := cfg.Reader()
	s := &fileSink{
		path:     r.String("path"),
		json:     r.String("format") == "json",
		interval: r.Duration("flush_interval"),
		append:   r.Bool("append"),
		now:      time.Now,
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	return s, nil
}

// The files the connectors make hold a tenant's data (a file sink's
// output, a file spout's dead letters) and are the owner's only, like
// the daemon's data dir: files 0600, the folders made for them 0700. A
// file or folder that exists already keeps its mode (it may be the
// user's, or not a regular file: /dev/null).
const (
	dataFileMode fs.FileMode = 0o600
	dataDirMode  fs.FileMode = 0o700
)

// sinkPath is the file a task writes.
func sinkPath(path string, ctx plugin.TaskContext) string {
	if ctx.Parallelism > 1 {
		return path + "." + strconv.FormatUint(uint64(ctx.TaskIndex), 10)
	}
	return path
}

func (s *fileSink) errorf(format string, args ...any) error {
	return fmt.Errorf("component %q task %d: file sink %s: %w", s.comp, s.task, s.path, fmt.Errorf(format, args...))
}

func (s *fileSink) Prepare(ctx context.Context, tc plugin.TaskContext, _ plugin.Collector) error {
	s.comp, s.task = tc.Component, tc.TaskID
	s.path = sinkPath(s.path, tc)
	if err := os.MkdirAll(filepath.Dir(s.path), dataDirMode); err != nil {
		return s.errorf("%w", err)
	}
	// The topology's first start begins the file afresh (unless append);
	// a restart appends to what the task wrote before (tc.Restarted).
	// Effectively once a restart restores a checkpoint: to its length
	// below, or without one (the checkpoint before the first, the whole
	// input again) afresh as a first start.
	resume := tc.Restarted && !tc.Checkpointing
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	switch {
	case resume:
		flags = os.O_CREATE | os.O_RDWR | os.O_APPEND // endTornLine reads the last line
	case s.append:
		flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	restore := int64(-1)
	if tc.State != nil {
		s.state = tc.State
		s.lenKey = positionKey("ardea.file.length.", tc.MaxKeyGroups, int(tc.TaskIndex), int(max(1, tc.Parallelism)))
		if v, ok := s.state.Get(s.lenKey); ok && len(v) == 8 {
			restore = int64(binary.LittleEndian.Uint64(v))
			flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
		}
	}
	f, err := os.OpenFile(s.path, flags, dataFileMode)
	if err != nil {
		return s.errorf("%w", err)
	}
	if restore >= 0 {
		// Restored from a checkpoint: drop what was written after it.
		if err := f.Truncate(restore); err != nil {
			f.Close()
			return s.errorf("truncate to the checkpoint's %d bytes: %w", restore, err)
		}
		s.written = restore
	} else if fi, err := f.Stat(); err == nil {
		s.written = fi.Size()
		if resume && s.written > 0 {
			if s.written, err = s.endTornLine(f, s.written); err != nil {
				f.Close()
				return s.errorf("restart: %w", err)
			}
		}
	}
	s.f = f
	s.w = bufio.NewWriterSize(f, fileSinkBuffer)
	s.keys = make([][][]byte, len(tc.Inputs))
	for i, in := range tc.Inputs {
		for _, name := range in.Fields {
			s.keys[i] = append(s.keys[i], append(appendJSONString(nil, []byte(name)), ':'))
		}
	}
	s.lastFlush = s.now()
	return nil
}

// endTornLine deals with a last line that a killed process left half
// written (a write is not atomic against SIGKILL), so that the next line
// does not continue it. Its tuple was not acked (a line is acked once it
// is wholly in the file) and is written again. Without append the file is
// all this run's output: the torn line is cut off. With append the part
// before the first start may be someone else's, so the line is only ended
// with a newline. It returns the file's new length.
func (s *fileSink) endTornLine(f *os.File, size int64) (int64, error) {
	var last [1]byte
	if _, err := f.ReadAt(last[:], size-1); err != nil {
		return 0, err
	}
	if last[0] == '\n' {
		return size, nil
	}
	if s.append {
		if _, err := f.Write([]byte{'\n'}); err != nil {
			return 0, err
		}
		return size + 1, nil
	}
	end, err := lastNewline(f, size)
	if err != nil {
		return 0, err
	}
	if err := f.Truncate(end); err != nil {
		return 0, err
	}
	return end, nil
}

// lastNewline is the offset just past the last '\n' of f's first size
// bytes (0 if there is none).
func lastNewline(f *os.File, size int64) (int64, error) {
	buf := make([]byte, 64<<10)
	for end := size; end > 0; {
		start := max(0, end-int64(len(buf)))
		b := buf[:end-start]
		if _, err := f.ReadAt(b, start); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return 0, nil
}

func (s *fileSink) Execute(ctx context.Context, batch []byte, out plugin.Collector) error {
	if s.w == nil {
		return s.errorf("Execute before Prepare or after Close")
	}
	r, err := tuple.NewBatchReader(batch)
	if err != nil {
		return s.errorf("%w", err)
	}
	for i := 0; ; i++ {
		rec, ok, err := r.Next()
		if err != nil {
			return s.errorf("%w", err)
		}
		if !ok {
			break
		}
		s.vals, _, err = tuple.DecodeValues(s.vals[:0], rec.Values)
		if err != nil {
			return s.errorf("record %d: %w", i, err)
		}
		if s.json {
			if int(rec.Input) >= len(s.keys) {
				return s.errorf("record %d: input index %d, but the task has %d inputs", i, rec.Input, len(s.keys))
			}
			s.line = s.appendJSON(s.line[:0], s.keys[rec.Input])
		} else {
			s.line = s.appendTSV(s.line[:0])
		}
		if _, err := s.w.Write(s.line); err != nil {
			return s.fail(out, s.errorf("%w", err))
		}
		s.written += int64(len(s.line))
		if rec.TupleID != 0 {
			s.tracked = append(s.tracked, rec.TupleID)
		}
	}
	if len(s.tracked) == 0 {
		return s.maybeFlush()
	}
	// At least once: a tuple is acked only once its line is in the file
	// (the page cache survives a killed process).
	if err := s.w.Flush(); err != nil {
		return s.fail(out, s.errorf("%w", err))
	}
	s.lastFlush = s.now()
	for _, id := range s.tracked {
		if err := out.Ack(id); err != nil {
			return err
		}
	}
	s.tracked = s.tracked[:0]
	return nil
}

// fail fails the batch's tracked tuples (their spouts replay them) and
// returns err.
func (s *fileSink) fail(out plugin.Collector, err error) error {
	for _, id := range s.tracked {
		out.Fail(id)
	}
	s.tracked = s.tracked[:0]
	return err
}

// Snapshot (effectively once) flushes the output and records the file's
// length in the task state, the length a restore truncates back to.
func (s *fileSink) Snapshot(context.Context, uint64, plugin.Collector) error {
	if s.w == nil || s.state == nil {
		return nil
	}
	if err := s.w.Flush(); err != nil {
		return s.errorf("%w", err)
	}
	s.lastFlush = s.now()
	binary.LittleEndian.PutUint64(s.lenBuf[:], uint64(s.written))
	s.state.Put(s.lenKey, s.lenBuf[:])
	return nil
}

func (s *fileSink) appendTSV(b []byte) []byte {
	for i, v := range s.vals {
		if i > 0 {
			b = append(b, '\t')
		}
		switch v.Kind {
		case tuple.String:
			for _, c := range v.B {
				switch c {
				case '\\':
					b = append(b, '\\', '\\')
				case '\t':
					b = append(b, '\\', 't')
				case '\n':
					b = append(b, '\\', 'n')
				case '\r':
					b = append(b, '\\', 'r')
				default:
					b = append(b, c)
				}
			}
		case tuple.Bytes:
			b = hex.AppendEncode(b, v.B)
		default:
			b = appendScalar(b, v)
		}
	}
	return append(b, '\n')
}

// appendScalar formats int64, float64 and bool values (null: nothing).
func appendScalar(b []byte, v tuple.Value) []byte {
	switch v.Kind {
	case tuple.Int64:
		return strconv.AppendInt(b, v.I, 10)
	case tuple.Float64:
		return strconv.AppendFloat(b, v.F, 'g', -1, 64)
	case tuple.Bool:
		return strconv.AppendBool(b, v.I != 0)
	}
	return b
}

func (s *fileSink) appendJSON(b []byte, keys [][]byte) []byte {
	return append(appendJSONObject(b, keys, s.vals), '\n')
}

// appendJSONObject appends vals as one JSON object keyed by keys (each a
// JSON-quoted name followed by ':'; extra values are "_<index>").
func appendJSONObject(b []byte, keys [][]byte, vals []tuple.Value) []byte {
	b = append(b, '{')
	for i, v := range vals {
		if i > 0 {
			b = append(b, ',')
		}
		if i < len(keys) {
			b = append(b, keys[i]...)
		} else {
			b = append(b, `"_`...)
			b = strconv.AppendInt(b, int64(i), 10)
			b = append(b, `":`...)
		}
		switch v.Kind {
		case tuple.Null:
			b = append(b, "null"...)
		case tuple.String:
			b = appendJSONString(b, v.B)
		case tuple.Bytes:
			b = append(b, '"')
			b = base64.StdEncoding.AppendEncode(b, v.B)
			b = append(b, '"')
		case tuple.Float64:
			switch {
			case math.IsNaN(v.F):
				b = append(b, `"NaN"`...)
			case math.IsInf(v.F, 1):
				b = append(b, `"+Inf"`...)
			case math.IsInf(v.F, -1):
				b = append(b, `"-Inf"`...)
			default:
				b = appendScalar(b, v)
			}
		default:
			b = appendScalar(b, v)
		}
	}
	return append(b, '}')
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string, escaping as encoding/json
// does (without HTML escaping) and replacing invalid UTF-8 with U+FFFD.
func appendJSONString(b, s []byte) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20 || c == 0x7f:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

func (s *fileSink) maybeFlush() error {
	now := s.now()
	if now.Sub(s.lastFlush) < s.interval {
		return nil
	}
	s.lastFlush = now
	if err := s.w.Flush(); err != nil {
		return s.errorf("%w", err)
	}
	return nil
}

func (s *fileSink) Tick(context.Context, plugin.Collector) error {
	if s.w == nil {
		return nil
	}
	return s.maybeFlush()
}

// Finish flushes and syncs the file to disk.
func (s *fileSink) Finish(context.Context, plugin.Collector) error {
	if s.w == nil {
		return nil
	}
	if err := s.w.Flush(); err != nil {
		return s.errorf("%w", err)
	}
	s.lastFlush = s.now()
	if err := s.f.Sync(); err != nil {
		return s.errorf("sync: %w", err)
	}
	return nil
}

// Close flushes and closes the file; it is safe to call more than once.
func (s *fileSink) Close(ctx context.Context) error {
	if s.f == nil {
		return nil
	}
	ferr := s.w.Flush()
	cerr := s.f.Close()
	s.f, s.w = nil, nil
	if ferr != nil {
		return s.errorf("%w", ferr)
	}
	if cerr != nil {
		return s.errorf("%w", cerr)
	}
	return nil
}
