package connectors

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// The file spout emits one tuple per line of a text file, with one string
// field "line" (the line without its "\n" or "\r\n"). It is finite: Next
// returns plugin.Done once the file is exhausted. With follow it is
// not: at the end of the file it waits for appended lines, and ends only
// once the follow_until file exists (a bounded input that ends when told).
//
// With parallelism p every task reads the whole file and task i emits the
// lines whose 0-based line number n satisfies n % p == i, so the lines are
// split evenly and deterministically; no line is emitted twice.
//
// A line longer than max_line_bytes (at most the tuple limit, and by
// default equal to it) goes to the dead-letter file when dead_letter is
// set, with its line number and the reason, and the spout goes on with the
// next line. Without dead_letter the spout ends its input before that line
// (a restart begins there) and, once everything it emitted was processed,
// fails with a *recordTooLargeError naming the file, the 1-based line
// number and the limit. Only the task that owns the line does either; the
// others skip it.

func init() {
	register(plugin.RegisterSpout(plugin.Spec{
		Name: "file",
		Summary: "Emits each line of a text file as a tuple (`line`), finite (with `follow`, until told: a growing file, as tail -f). With parallelism p, task i reads lines n with n % p == i. " +
			"Replayable: at least once a line's message id is its line number, and the read position is in the task state.",
		Fields: []plugin.Field{
			{Name: "path", Type: plugin.TypePath, Required: true, Doc: "file to read; relative to the topology file's directory"},
			{Name: "max_line_bytes", Type: plugin.TypeInt, Default: "", Min: "1", Doc: "longest accepted line in bytes, at most the tuple limit (max.tuple.bytes, topology.max.tuple.bytes: 1 MiB), which is its default; a longer line goes to dead_letter, or without one ends the input there and fails the topology once the lines before it were processed"},
			{Name: "rate", Type: plugin.TypeFloat, Default: "0", Min: "0", Doc: "lines per second per task (replays included); 0 = as fast as possible"},
			{Name: "max_retries", Type: plugin.TypeInt, Default: "0", Min: "0", Doc: "at least once: a line that failed this many times is written to dead_letter instead of replayed again; 0 = replay forever"},
			{Name: "dead_letter", Type: plugin.TypePath, Default: "", Doc: "file that receives lines given up after max_retries and lines longer than max_line_bytes, one JSON object each (line number, topology, component, failures, error, value); required with max_retries"},
			{Name: "follow", Type: plugin.TypeBool, Default: "false", Doc: "the end of the file is not the end of the input: the spout waits there for lines appended later (as tail -f; a last line without its newline waits for it), so the topology runs until stopped, swapped or killed, or until follow_until exists"},
			{Name: "follow_until", Type: plugin.TypePath, Default: "", Doc: "with follow: the input ends once this file exists and every line written before it was read (a test or a script says when a bounded input ends); empty = never"},
		},
		Outputs: map[string][]string{"default": {"line"}},
		Check:   checkFileSpout,
	}, newFileSpout))
}

// checkFileSpout refuses a max_line_bytes above the tuple limit: such a
// line would pass the spout's check only to fail further on.
func checkFileSpout(c plugin.Config) error {
	r := c.Reader()
	limit, setting := r.TupleLimit()
	n := r.Int("max_line_bytes")
	if err := r.Err(); err != nil {
		return err
	}
	if n > limit {
		return fmt.Errorf("max_line_bytes %d exceeds %s %d (the largest tuple; lower max_line_bytes or raise %s)", n, setting, limit, setting)
	}
	return nil
}

// fileSpoutBuffer is the read buffer size; longer lines are assembled.
const fileSpoutBuffer = 256 << 10

type fileSpout struct {
	topology string
	path     string
	maxLine  int
	rate     float64

	// follow: the end of the file is not the end of the input until the
	// file until exists (never when until is empty); untilSeen is set once
	// it did, and the next end of the file is the end.
	follow    bool
	until     string
	untilSeen bool

	// Pacing with rate > 0: a token bucket of half a second of lines.
	now    func() time.Time
	tokens float64
	last   time.Time

	comp   string
	task   int64
	par    int64
	stream uint16
	f      *os.File
	r      *bufio.Reader
	line   int64 // 0-based number of the next line to read
	off    int64 // byte offset of the next line
	state  plugin.State
	posKey []byte // state key of the read position
	long   []byte // assembles lines longer than the read buffer
	vals   []byte // values block scratch
	eof    bool
	posBuf [16]byte

	// At least once: lines by message id (line number + 1) awaiting their
	// outcome, and failed ones to emit again.
	pending map[uint64]*pendingLine
	replay  []uint64
	replays int
	metric  func(name string, delta int64)
	emitted int // lines emitted, replays included (pacing)

	// Dead letters: lines given up after maxRetries fails (at least once)
	// and lines longer than maxLine.
	maxRetries  int
	deadPath    string
	dead        *os.File
	deadLetters int

	// A line longer than maxLine: tooLong is its error once readLine found
	// it, longDone says whether s.long holds all of it; failed ends the
	// input (no dead letters), reported by Next once nothing is pending.
	longDone bool
	failed   error
}

func newFileSpout(cfg plugin.Config) (plugin.Spout, error) {
	r := cfg.Reader()
	maxLine := r.Int("max_line_bytes")
	if maxLine == 0 {
		maxLine, _ = r.TupleLimit()
	}
	s := &fileSpout{path: r.String("path"), maxLine: int(maxLine), rate: r.Float("rate"), now: time.Now,
		maxRetries: int(r.Int("max_retries")), deadPath: r.String("dead_letter"),
		follow: r.Bool("follow"), until: r.String("follow_until")}
	if err := r.Err(); err != nil {
		return nil, err
	}
	if s.maxRetries > 0 && s.deadPath == "" {
		return nil, errors.New(`config "max_retries": needs "dead_letter", the file that receives the lines given up`)
	}
	if s.until != "" && !s.follow {
		return nil, errors.New(`config "follow_until": needs "follow: true" (without it the input ends at the end of the file)`)
	}
	return s, nil
}

func (s *fileSpout) Open(ctx context.Context, tc plugin.TaskContext, _ plugin.Collector) error {
	s.comp, s.topology = tc.Component, tc.Topology
	s.metric = tc.Metric
	if s.metric == nil {
		s.metric = func(string, int64) {}
	}
	s.task, s.par = taskOf(tc)
	stream, err := outputStream(tc, "file spout", "default", 1)
	if err != nil {
		return err
	}
	s.stream = stream
	f, err := os.Open(s.path)
	if err != nil {
		return fmt.Errorf("component %q: file spout: %w", s.comp, err)
	}
	if fi, err := f.Stat(); err != nil || fi.IsDir() {
		f.Close()
		if err == nil {
			err = errors.New("is a directory, expected a file")
		}
		return fmt.Errorf("component %q: file spout: %s: %w", s.comp, s.path, err)
	}
	s.f = f
	if tc.State != nil {
		// The read position lives in the task's host-side state, so a
		// container restarted by a re-plan (a live rescale) goes on where
		// its predecessor stopped instead of emitting the file again.
		s.state = tc.State
		s.posKey = positionKey("ardea.file.position.", tc.MaxKeyGroups, int(s.task), int(s.par))
		if v, ok := s.state.Get(s.posKey); ok && len(v) == 16 {
			s.off = int64(binary.LittleEndian.Uint64(v))
			s.line = int64(binary.LittleEndian.Uint64(v[8:]))
			if _, err := f.Seek(s.off, io.SeekStart); err != nil {
				f.Close()
				return fmt.Errorf("component %q: file spout: %s: resume at byte %d: %w", s.comp, s.path, s.off, err)
			}
		}
	}
	s.r = bufio.NewReaderSize(f, fileSpoutBuffer)
	if tc.Acking {
		s.pending = map[uint64]*pendingLine{}
	}
	if tc.Logger != nil {
		tc.Logger.Debug("file spout open", "path", s.path, "task_index", s.task, "parallelism", s.par)
	}
	return nil
}

func (s *fileSpout) Next(ctx context.Context, budget int, out plugin.Collector) (plugin.Status, error) {
	if s.r == nil && !s.eof {
		return plugin.Done, fmt.Errorf("component %q: file spout: Next before Open", s.comp)
	}
	if s.rate > 0 {
		now := s.now()
		if s.last.IsZero() {
			s.tokens, s.last = 1, now
		}
		if el := now.Sub(s.last); el > 0 {
			s.tokens = min(max(1, s.rate/2), s.tokens+el.Seconds()*s.rate)
		}
		s.last = now
		if s.tokens < 1 {
			return plugin.Idle, nil
		}
		budget = min(budget, int(s.tokens))
		defer func(before int) { s.tokens -= float64(s.emitted - before) }(s.emitted)
	}
	n := 0
	if len(s.replay) > 0 {
		// Replays take at most half the budget while new lines remain, so a
		// line that always fails cannot starve the rest of the file.
		r := min(len(s.replay), budget)
		if !s.eof {
			r = min(r, max(1, budget/2))
		}
		for _, id := range s.replay[:r] {
			if p := s.pending[id]; p != nil {
				s.replays++
				s.emitted++
				s.metric("file_replayed", 1)
				s.vals = appendStringValues(s.vals[:0], p.line)
				if err := out.Emit(s.stream, tuple.NoTask, id, nil, s.vals); err != nil {
					return plugin.Emitted, err
				}
			}
		}
		s.replay = s.replay[r:]
		n = r
	}
	for !s.eof && n < budget {
		start, number := s.off, s.line
		line, mine, err := s.readLine()
		if err == io.EOF && s.follow && !s.untilSeen {
			if s.until == "" || !exists(s.until) {
				break // for now: lines may still be appended
			}
			s.untilSeen = true // lines written before it may follow
			continue
		}
		if err == io.EOF {
			s.eof = true
			s.savePosition()
			s.closeFile()
			break
		}
		if errors.Is(err, errLineTooLong) {
			var dlErr error
			if s.deadPath != "" {
				if dlErr = s.deadLetterLong(number); dlErr == nil {
					continue
				}
			}
			// End the input before the line: a restart begins there.
			s.failed = &recordTooLargeError{Component: s.comp, Spout: "file spout", Source: fmt.Sprintf("%s:%d", s.path, number+1),
				What: "line", Setting: "max_line_bytes", Limit: int64(s.maxLine), DeadLetter: dlErr}
			s.off, s.line, s.eof = start, number, true
			s.savePosition()
			s.closeFile()
			break
		}
		if err != nil {
			return plugin.Emitted, err
		}
		if !mine {
			continue
		}
		var msgID uint64
		if s.pending != nil {
			msgID = uint64(number + 1)
			s.pending[msgID] = &pendingLine{off: start, line: bytes.Clone(line)}
		}
		s.vals = appendStringValues(s.vals[:0], line)
		if err := out.Emit(s.stream, tuple.NoTask, msgID, nil, s.vals); err != nil {
			return plugin.Emitted, err
		}
		s.emitted++
		s.metric("file_lines", 1)
		s.metric("file_bytes", int64(len(line)))
		n++
	}
	if !s.eof || s.failed != nil {
		s.savePosition()
	}
	switch {
	case n > 0:
		return plugin.Emitted, nil
	case s.eof && len(s.pending) == 0:
		// After an oversized line without dead letters: everything before
		// it completed (or, at most once, was emitted); the engine finishes
		// the stream, then fails the task with the error.
		return plugin.Done, s.failed
	default:
		return plugin.Idle, nil // at the end, waiting for outcomes
	}
}

// pendingLine is a line emitted under at-least-once and not yet acked.
type pendingLine struct {
	off   int64 // byte offset of the line's start
	line  []byte
	fails int
	last  string // how its last tree failed (NoteFailures)
}

// savePosition records where a restarted instance goes on: the next line,
// or under at-least-once the oldest line not yet acked (lines after it may
// be emitted twice; none is lost).
func (s *fileSpout) savePosition() {
	if s.state == nil {
		return
	}
	off, line := s.off, s.line
	if len(s.pending) > 0 {
		oldest := uint64(math.MaxUint64)
		for id := range s.pending {
			oldest = min(oldest, id)
		}
		off, line = s.pending[oldest].off, int64(oldest-1)
	}
	binary.LittleEndian.PutUint64(s.posBuf[:], uint64(off))
	binary.LittleEndian.PutUint64(s.posBuf[8:], uint64(line))
	s.state.Put(s.posKey, s.posBuf[:])
}

// positionKey is a state key in a key group this task owns, so that it
// comes back to the same task index after a re-plan.
func positionKey(prefix string, maxKG, task, par int) []byte {
	if maxKG <= 0 {
		maxKG = tuple.DefaultMaxKeyGroups
	}
	for i := 0; ; i++ {
		k := []byte(prefix + strconv.Itoa(i))
		kg := tuple.KeyGroup(tuple.StateKeyHash(k), maxKG)
		if tuple.TaskIndexForKeyGroup(kg, maxKG, par) == task {
			return k
		}
	}
}

// errLineTooLong is readLine's answer for a line of this task longer than
// maxLine: s.long holds its start (all of it when s.longDone), the rest is
// unread.
var errLineTooLong = errors.New("line longer than max_line_bytes")

// readLine reads the next line and says whether this task emits it. Lines
// of other tasks are skipped without being copied or checked.
func (s *fileSpout) readLine() (line []byte, mine bool, err error) {
	mine = s.line%s.par == s.task
	start := s.off
	b, err := s.r.ReadSlice('\n')
	s.off += int64(len(b))
	switch {
	case err == nil:
	case err == io.EOF:
		if len(b) == 0 {
			return nil, false, io.EOF
		}
		if s.follow && !s.untilSeen {
			// A last line without its newline may be still being written:
			// read it again once it is complete.
			return nil, false, s.unread(s.off - start)
		}
	case errors.Is(err, bufio.ErrBufferFull):
		if mine {
			s.long = append(s.long[:0], b...)
		}
		for errors.Is(err, bufio.ErrBufferFull) {
			if mine && len(s.long) > s.maxLine+2 {
				s.longDone = false
				return nil, false, errLineTooLong
			}
			b, err = s.r.ReadSlice('\n')
			s.off += int64(len(b))
			if mine {
				s.long = append(s.long, b...)
			}
		}
		if err != nil && err != io.EOF {
			return nil, false, s.readError(err)
		}
		if err == io.EOF && s.follow && !s.untilSeen {
			return nil, false, s.unread(s.off - start)
		}
		b = s.long
	default:
		return nil, false, s.readError(err)
	}
	if !mine {
		s.line++
		return nil, false, nil
	}
	b = bytes.TrimSuffix(b, []byte{'\n'})
	b = bytes.TrimSuffix(b, []byte{'\r'})
	if len(b) > s.maxLine {
		s.long, s.longDone = append(s.long[:0], b...), true
		return nil, false, errLineTooLong
	}
	s.line++
	return b, true, nil
}

// unread goes back n bytes (a partial last line, following) and returns
// io.EOF, or the error of the seek.
func (s *fileSpout) unread(n int64) error {
	s.off -= n
	if _, err := s.f.Seek(s.off, io.SeekStart); err != nil {
		return s.readError(err)
	}
	s.r.Reset(s.f)
	return io.EOF
}

// exists reports whether path exists.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func (s *fileSpout) readError(err error) error {
	return fmt.Errorf("component %q: file spout: %s: reading line %d: %w", s.comp, s.path, s.line+1, err)
}

func (s *fileSpout) closeFile() error {
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}

func (s *fileSpout) Ack(ctx context.Context, ids []uint64, _ plugin.Collector) error {
	for _, id := range ids {
		delete(s.pending, id)
	}
	return nil
}

// Fail queues the lines for Next to emit again, with the same message id;
// a line that failed max_retries times goes to the dead-letter file.
func (s *fileSpout) Fail(ctx context.Context, ids []uint64, _ plugin.Collector) error {
	for _, id := range ids {
		p := s.pending[id]
		if p == nil {
			continue
		}
		if p.fails++; s.maxRetries > 0 && p.fails >= s.maxRetries {
			if err := s.deadLetter(id, p); err != nil {
				return err
			}
			delete(s.pending, id)
			continue
		}
		s.replay = append(s.replay, id)
	}
	return nil
}

// NoteFailures records how the trees about to be failed ended.
func (s *fileSpout) NoteFailures(fs []plugin.Failure) {
	for _, f := range fs {
		if p := s.pending[f.MsgID]; p != nil {
			p.last = failureText(f)
		}
	}
}

// fileDeadLetter is one line of the dead-letter file.
type fileDeadLetter struct {
	Line      uint64 `json:"line"`
	Topology  string `json:"topology"`
	Component string `json:"component"`
	Failures  int    `json:"failures"`
	Error     string `json:"error"`
	Value     string `json:"value"`
}

// deadLetter appends a given-up line to the dead-letter file as a JSON
// object (synced: the line is acked by being dropped from pending).
func (s *fileSpout) deadLetter(id uint64, p *pendingLine) error {
	if err := s.openDead(); err != nil {
		return err
	}
	last := p.last
	if last == "" {
		last = "failed"
	}
	rec, err := json.Marshal(fileDeadLetter{Line: id, Topology: s.topology, Component: s.comp, Failures: p.fails,
		Error: fmt.Sprintf("%d failures; last: %s", p.fails, last), Value: string(p.line)})
	if err != nil {
		return fmt.Errorf("component %q: file spout: dead letter: %w", s.comp, err)
	}
	if _, err := s.dead.Write(append(rec, '\n')); err != nil {
		return fmt.Errorf("component %q: file spout: dead letter %s: %w", s.comp, s.deadPath, err)
	}
	s.deadLetters++
	s.metric("file_dead_letters", 1)
	return s.dead.Sync()
}

// openDead opens the dead-letter file for appending.
func (s *fileSpout) openDead() error {
	if s.dead != nil {
		return nil
	}
	f, err := os.OpenFile(s.deadPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, dataFileMode)
	if err != nil {
		return fmt.Errorf("component %q: file spout: dead letter %s: %w", s.comp, s.deadPath, err)
	}
	s.dead = f
	return nil
}

// deadLetterLong moves line number (0-based) of this task, longer than
// max_line_bytes, to the dead-letter file: its start is in s.long, the
// rest is read from the file and written as it comes, so memory stays
// bounded whatever the line's length. The record holds the line number,
// the whole line and, as its error, its length and the limit. A write
// that fails is cut off again so the file holds only whole records.
func (s *fileSpout) deadLetterLong(number int64) (err error) {
	fail := func(err error) error { return fmt.Errorf("%s: %w", s.deadPath, err) }
	if s.dead == nil {
		f, err := os.OpenFile(s.deadPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, dataFileMode)
		if err != nil {
			return err
		}
		s.dead = f
	}
	fi, err := s.dead.Stat()
	if err != nil {
		return fail(err)
	}
	defer func() {
		if err != nil {
			s.dead.Truncate(fi.Size())
		}
	}()
	head, _ := json.Marshal(struct {
		Line      uint64 `json:"line"`
		Topology  string `json:"topology"`
		Component string `json:"component"`
	}{uint64(number + 1), s.topology, s.comp})
	w := bufio.NewWriterSize(s.dead, 64<<10)
	w.Write(head[:len(head)-1])
	w.WriteString(`,"value":"`)
	size := int64(0)
	var esc, carry []byte
	emit := func(chunk []byte, final bool) {
		buf := append(carry, chunk...)
		if final {
			buf = bytes.TrimSuffix(bytes.TrimSuffix(buf, []byte{'\n'}), []byte{'\r'})
		} else if n := len(buf); n > 0 && buf[n-1] == '\r' {
			// Perhaps the line's "\r\n": decided with the next chunk.
			esc, carry = jsonChars(esc[:0], buf[:n-1], false)
			carry = append(carry, '\r')
			size += int64(n - len(carry))
			w.Write(esc)
			return
		}
		esc, carry = jsonChars(esc[:0], buf, final)
		size += int64(len(buf) - len(carry))
		carry = bytes.Clone(carry)
		w.Write(esc)
	}
	emit(s.long, s.longDone)
	for !s.longDone {
		b, rerr := s.r.ReadSlice('\n')
		s.off += int64(len(b))
		switch {
		case rerr == nil || rerr == io.EOF:
			emit(b, true)
			s.longDone = true
		case errors.Is(rerr, bufio.ErrBufferFull):
			emit(b, false)
		default:
			return rerr
		}
	}
	reason, _ := json.Marshal(tooLargeReason("line", size, "max_line_bytes", int64(s.maxLine)))
	fmt.Fprintf(w, `","failures":0,"error":%s}`+"\n", reason)
	if err := w.Flush(); err != nil {
		return fail(err)
	}
	if err := s.dead.Sync(); err != nil {
		return fail(err)
	}
	s.long = s.long[:0]
	if cap(s.long) > 4*fileSpoutBuffer {
		s.long = nil // do not keep a huge line's buffer
	}
	s.line++
	s.deadLetters++
	s.metric("file_dead_letters", 1)
	s.metric("file_oversized", 1)
	return nil
}

func (s *fileSpout) Activate(ctx context.Context) error   { return nil }
func (s *fileSpout) Deactivate(ctx context.Context) error { return nil }

// Close releases the files; it is safe to call more than once.
func (s *fileSpout) Close(ctx context.Context) error {
	s.r = nil
	if s.dead != nil {
		s.dead.Close()
		s.dead = nil
	}
	return s.closeFile()
}
