package ardea

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unsafe"

	"github.com/ardea-dev/ardea/wasm-sdk/go/internal/tuple"
)

// Kind is a field's type (the ABI's tag).
type Kind = tuple.Kind

// Field kinds.
const (
	KindNull   Kind = tuple.Null
	KindBytes  Kind = tuple.Bytes
	KindString Kind = tuple.String
	KindInt    Kind = tuple.Int64
	KindFloat  Kind = tuple.Float64
	KindBool   Kind = tuple.Bool
)

// Input is one (component, stream) pair a bolt subscribes to, with the
// stream's declared fields. A tuple's Input is found by its input index.
type Input struct {
	Component string
	Stream    string
	Fields    []string
}

// input is an Input as tuples see it.
type input struct {
	Input
	// The last field name looked up and its index+1 (0: none): a hot path
	// that names a field with the same string every time (a constant)
	// finds it by comparing the string's pointer and length.
	last    string
	lastIdx int
}

// index is the position of a declared field, or -1.
func (in *input) index(field string) int {
	if in.lastIdx > 0 && len(field) == len(in.last) && unsafe.StringData(field) == unsafe.StringData(in.last) {
		return in.lastIdx - 1
	}
	for i, f := range in.Fields {
		if f == field {
			in.last, in.lastIdx = field, i+1
			return i
		}
	}
	return -1
}

// Stream is a declared output stream.
type Stream struct {
	Name   string
	Fields []string
}

// Tuple is one input tuple. It is a small value that views the input batch
// in the SDK's buffer: its values are valid only during the Execute call
// that received it (use Copy to keep one). Its ID, Component, Stream and
// SourceTask stay valid, so a kept Tuple can still be acked later.
//
// Accessors take a field index (0-based) or a declared field name. A field
// of the wrong kind makes the accessor panic (reported as the call's error);
// a null field reads as the zero value. String and Bytes accept both string
// and bytes fields.
type Tuple struct {
	in   *input
	raw  []byte   // the encoded values block
	offs []uint32 // offset of each field's tag in raw
	id   uint64
	src  uint32
	idx  uint16
	// k0 is 1 + the payload length of the tuple's only field when it is
	// a string or bytes shorter than 65535 bytes (then the payload is
	// raw[7:]), else 0. It fits in padding: Tuple stays 9 words.
	k0 uint16
}

// scanValues validates a values block that must span all of b and records
// the offset of every field's tag. It accepts exactly what
// tuple.DecodeValues accepts.
func scanValues(offs []uint32, b []byte) ([]uint32, error) {
	if len(b) < 2 {
		return offs, tuple.ErrShort
	}
	n := int(binary.LittleEndian.Uint16(b))
	off := 2
	for i := 0; i < n; i++ {
		if off >= len(b) {
			return offs, fmt.Errorf("field %d: %w", i, tuple.ErrShort)
		}
		offs = append(offs, uint32(off))
		left := len(b) - off
		switch Kind(b[off]) {
		case KindNull:
			off++
		case KindBytes, KindString:
			if left < 5 {
				return offs, fmt.Errorf("field %d: %w", i, tuple.ErrShort)
			}
			l := binary.LittleEndian.Uint32(b[off+1:])
			if uint64(left-5) < uint64(l) {
				return offs, fmt.Errorf("field %d: %w", i, tuple.ErrShort)
			}
			off += 5 + int(l)
		case KindInt, KindFloat:
			if left < 9 {
				return offs, fmt.Errorf("field %d: %w", i, tuple.ErrShort)
			}
			off += 9
		case KindBool:
			if left < 2 {
				return offs, fmt.Errorf("field %d: %w", i, tuple.ErrShort)
			}
			if b[off+1] > 1 {
				return offs, fmt.Errorf("field %d: bool payload %d is not 0 or 1", i, b[off+1])
			}
			off += 2
		default:
			return offs, fmt.Errorf("field %d: %w %d", i, tuple.ErrBadKind, b[off])
		}
	}
	if off != len(b) {
		return offs, fmt.Errorf("%d trailing bytes after %d fields", len(b)-off, n)
	}
	return offs, nil
}

// scanFast is scanValues for the hot path: ok is false if b is malformed
// (scanValues then says how).
func scanFast(offs []uint32, b []byte) (_ []uint32, ok bool) {
	if len(b) < 2 {
		return offs, false
	}
	n := int(binary.LittleEndian.Uint16(b))
	off := 2
	for ; n > 0; n-- {
		if off >= len(b) {
			return offs, false
		}
		offs = append(offs, uint32(off))
		switch Kind(b[off]) {
		case KindString, KindBytes:
			if len(b)-off < 5 {
				return offs, false
			}
			l := binary.LittleEndian.Uint32(b[off+1:])
			if uint64(len(b)-off-5) < uint64(l) {
				return offs, false
			}
			off += 5 + int(l)
		case KindInt, KindFloat:
			off += 9
		case KindNull:
			off++
		case KindBool:
			if len(b)-off < 2 || b[off+1] > 1 {
				return offs, false
			}
			off += 2
		default:
			return offs, false
		}
	}
	return offs, off == len(b)
}

// Component is the upstream component that emitted the tuple.
func (t Tuple) Component() string {
	if t.in == nil {
		return ""
	}
	return t.in.Component
}

// Stream is the stream the tuple was emitted on.
func (t Tuple) Stream() string {
	if t.in == nil {
		return ""
	}
	return t.in.Stream
}

// Input is the tuple's input index (the position of its (component, stream)
// in Context.Inputs).
func (t Tuple) Input() int { return int(t.idx) }

// Fields are the declared field names of the tuple's stream.
func (t Tuple) Fields() []string {
	if t.in == nil {
		return nil
	}
	return t.in.Fields
}

// SourceTask is the id of the task that emitted the tuple.
func (t Tuple) SourceTask() uint32 { return t.src }

// ID is the tuple id: 0 unless the topology tracks delivery. Anchor emits
// on the tuple and Ack or Fail it; the SDK does both only for ids other
// than 0.
func (t Tuple) ID() uint64 { return t.id }

// Len is the number of fields.
func (t Tuple) Len() int { return len(t.offs) }

// Index is the position of a declared field, or -1.
func (t Tuple) Index(field string) int {
	if t.in == nil {
		return -1
	}
	return t.in.index(field)
}

// Kind is the kind of field i.
func (t Tuple) Kind(i int) Kind { return Kind(t.raw[t.off(i)]) }

// off is the offset of field i's tag; an index past the tuple's fields
// panics with a FieldError.
func (t *Tuple) off(i int) int {
	if uint(i) >= uint(len(t.offs)) {
		t.noField("", i)
	}
	return int(t.offs[i])
}

// IsNull reports whether field i is null.
func (t Tuple) IsNull(i int) bool { return t.Kind(i) == KindNull }

// payload is field i's bytes after the tag and length prefix (the bytes
// fields grouping hashes).
func (t *Tuple) payload(i int) (Kind, []byte) {
	o := t.off(i)
	k := Kind(t.raw[o])
	switch k {
	case KindBytes, KindString:
		n := int(binary.LittleEndian.Uint32(t.raw[o+1:]))
		return k, t.raw[o+5 : o+5+n : o+5+n]
	case KindInt, KindFloat:
		return k, t.raw[o+1 : o+9 : o+9]
	case KindBool:
		return k, t.raw[o+1 : o+2 : o+2]
	}
	return k, nil
}

// KindError is the panic value of an accessor used on a field of another
// kind.
type KindError struct {
	Field int
	Name  string // declared field name, if known
	Got   Kind
	Want  string
}

func (e *KindError) Error() string {
	name := ""
	if e.Name != "" {
		name = " (" + e.Name + ")"
	}
	return fmt.Sprintf("ardea: field %d%s is %s, not %s", e.Field, name, e.Got, e.Want)
}

func (t Tuple) wrongKind(i int, got Kind, want string) {
	e := &KindError{Field: i, Got: got, Want: want}
	if t.in != nil && i < len(t.in.Fields) {
		e.Name = t.in.Fields[i]
	}
	panic(e)
}

func (t *Tuple) text(i int, want string) []byte {
	k, p := t.payload(i)
	if k != KindString && k != KindBytes && k != KindNull {
		t.wrongKind(i, k, want)
	}
	return p
}

func (t *Tuple) fixed(i int, want Kind) []byte {
	k, p := t.payload(i)
	if k != want && k != KindNull {
		t.wrongKind(i, k, want.String())
	}
	return p
}

// String returns field i (string or bytes) as a new string.
func (t Tuple) String(i int) string { return string(t.text(i, "string")) }

// Bytes returns a copy of field i (bytes or string).
func (t Tuple) Bytes(i int) []byte { return slices.Clone(t.text(i, "bytes")) }

// BytesView returns field i (bytes or string) without copying: the slice
// views the input buffer and is valid only until the current call returns.
// Emit it as a string with Text(b) or look a map up with m[string(b)]
// without allocating.
func (t Tuple) BytesView(i int) []byte {
	o := t.off(i)
	if k := Kind(t.raw[o]); k == KindString || k == KindBytes {
		n := int(binary.LittleEndian.Uint32(t.raw[o+1:]))
		return t.raw[o+5 : o+5+n : o+5+n]
	}
	return t.text(i, "bytes")
}

// Int returns field i, an int64.
func (t Tuple) Int(i int) int64 {
	if p := t.fixed(i, KindInt); len(p) == 8 {
		return int64(binary.LittleEndian.Uint64(p))
	}
	return 0
}

// Float returns field i, a float64.
func (t Tuple) Float(i int) float64 {
	if p := t.fixed(i, KindFloat); len(p) == 8 {
		return math.Float64frombits(binary.LittleEndian.Uint64(p))
	}
	return 0
}

// Bool returns field i, a bool.
func (t Tuple) Bool(i int) bool {
	p := t.fixed(i, KindBool)
	return len(p) == 1 && p[0] == 1
}

// Value returns field i as nil, []byte (a copy), string, int64, float64 or
// bool.
func (t Tuple) Value(i int) any {
	switch k, p := t.payload(i); k {
	case KindBytes:
		return slices.Clone(p)
	case KindString:
		return string(p)
	case KindInt:
		return t.Int(i)
	case KindFloat:
		return t.Float(i)
	case KindBool:
		return p[0] == 1
	}
	return nil
}

// Values returns all fields (see Value). It allocates; prefer the typed
// accessors on hot paths.
func (t Tuple) Values() []any {
	out := make([]any, len(t.offs))
	for i := range out {
		out[i] = t.Value(i)
	}
	return out
}

// Raw is the encoded values block (ABI "values"), viewing the input buffer.
func (t Tuple) Raw() []byte { return t.raw }

// Copy returns a tuple that owns its values and stays valid after the call.
func (t Tuple) Copy() Tuple {
	t.raw = slices.Clone(t.raw)
	t.offs = slices.Clone(t.offs)
	return t
}

func (t Tuple) mustIndex(field string) int {
	i := t.Index(field)
	if i < 0 || i >= len(t.offs) {
		t.noField(field, i)
	}
	return i
}

// FieldError is the panic value of an accessor asked for a field the
// tuple does not have: a name its stream does not declare, or an index
// past its fields. Like any panic in Execute, it fails the tuple, with
// this message.
type FieldError struct {
	Component, Stream string   // where the tuple comes from
	Name              string   // the field name asked for ("" if by index)
	Index             int      // the index asked for (by name: -1, or the declared index the tuple lacks)
	Fields            []string // the fields the tuple's stream declares
	Len               int      // the tuple's number of values
}

func (e *FieldError) Error() string {
	from := "the tuple"
	if e.Component != "" || e.Stream != "" {
		from += " from " + e.Component + "/" + e.Stream
	}
	has := fmt.Sprintf("%d values", e.Len)
	if len(e.Fields) > 0 {
		has = "fields " + quoteList(e.Fields)
	} else if e.Len == 1 {
		has = "1 value"
	}
	if e.Name != "" {
		if e.Index >= 0 {
			return fmt.Sprintf("ardea: %s declares field %q at index %d but has %d values", from, e.Name, e.Index, e.Len)
		}
		return fmt.Sprintf("ardea: %s has no field %q (it has %s)", from, e.Name, has)
	}
	return fmt.Sprintf("ardea: field index %d is out of range: %s has %s", e.Index, from, has)
}

// noField panics with a FieldError.
//
//go:noinline
func (t *Tuple) noField(name string, i int) {
	panic(&FieldError{Component: t.Component(), Stream: t.Stream(), Name: name, Index: i, Fields: t.Fields(), Len: len(t.offs)})
}

func quoteList(names []string) string {
	b := make([]byte, 0, 16*len(names))
	for i, n := range names {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = strconv.AppendQuote(b, n)
	}
	return string(b)
}

// StringByName returns the declared field as a string (see String).
func (t Tuple) StringByName(field string) string { return t.String(t.mustIndex(field)) }

// BytesByName returns a copy of the declared field (see Bytes).
func (t Tuple) BytesByName(field string) []byte { return t.Bytes(t.mustIndex(field)) }

// IntByName returns the declared field as an int64.
func (t Tuple) IntByName(field string) int64 { return t.Int(t.mustIndex(field)) }

// FloatByName returns the declared field as a float64.
func (t Tuple) FloatByName(field string) float64 { return t.Float(t.mustIndex(field)) }

// BoolByName returns the declared field as a bool.
func (t Tuple) BoolByName(field string) bool { return t.Bool(t.mustIndex(field)) }

// KeySep separates a state key's routing part from an optional suffix.
const KeySep = "\x1f"

// StateKey builds the state key of t's named fields by the ABI's "rule for
// state that moves with its keys": the fields' payloads (a string's UTF-8
// bytes, an int64 or float64 as 8 bytes LE, a bool as 1 byte, null as
// nothing) joined with 0x00. Name the fields the component is fields-grouped
// on, in the grouping's order; the key then hashes to the key group the
// tuple was routed by, and its state moves with it when the component is
// rescaled. Append KeySep and any suffix to keep several values per key.
//
// StateKey allocates the key; StateKeyView and AppendStateKey build the
// same bytes without allocating, for the State methods whose names end in
// Bytes.
//
// Caveat (ABI v1): the host hashes a state key only up to its first 0x1F
// byte, so a payload that itself contains 0x1F (for example the int64 31)
// yields a key whose state stays in another key group. Counts stay correct
// while parallelism is unchanged.
func StateKey(t Tuple, fields ...string) string {
	if len(fields) == 1 {
		return string(StateKeyView(t, fields[0]))
	}
	var buf [128]byte
	return string(AppendStateKey(buf[:0], t, fields...))
}

// StateKeyAt is StateKey with field indexes instead of names.
func StateKeyAt(t Tuple, fields ...int) string {
	var buf [128]byte
	return string(AppendStateKeyAt(buf[:0], t, fields...))
}

// StateKeyView is the state key of a single field (StateKey(t, field))
// without a copy: the field's payload, viewing the input buffer like
// BytesView (valid only during the current call). Pass it to the State
// methods whose names end in Bytes, which copy a key they keep.
func StateKeyView(t Tuple, field string) []byte {
	// The usual case, small enough to be inlined: the tuple's only field
	// (a string or bytes, see Tuple.k0), named as last time (the name
	// compared by pointer).
	if in := t.in; t.k0 != 0 && in.lastIdx == 1 && len(field) == len(in.last) && unsafe.StringData(field) == unsafe.StringData(in.last) {
		e := 6 + int(t.k0)
		return t.raw[7:e:e]
	}
	return stateKeyView(t, field)
}

// stateKeyView is StateKeyView for any field.
func stateKeyView(t Tuple, field string) []byte {
	if in := t.in; in != nil && in.lastIdx > 0 && len(field) == len(in.last) && unsafe.StringData(field) == unsafe.StringData(in.last) {
		return t.keyView(in.lastIdx - 1)
	}
	return t.keyView(t.mustIndex(field))
}

// StateKeyViewAt is StateKeyView with a field index.
func StateKeyViewAt(t Tuple, i int) []byte { return t.keyView(i) }

// keyView is field i's payload, with the string and bytes kinds first.
func (t *Tuple) keyView(i int) []byte {
	o := t.off(i)
	if k := Kind(t.raw[o]); k == KindString || k == KindBytes {
		n := int(binary.LittleEndian.Uint32(t.raw[o+1:]))
		return t.raw[o+5 : o+5+n : o+5+n]
	}
	_, p := t.payload(i)
	return p
}

// AppendStateKey appends the state key of t's named fields (see StateKey)
// to dst and returns the extended slice.
func AppendStateKey(dst []byte, t Tuple, fields ...string) []byte {
	for i, f := range fields {
		if i > 0 {
			dst = append(dst, 0)
		}
		_, p := t.payload(t.mustIndex(f))
		dst = append(dst, p...)
	}
	return dst
}

// AppendStateKeyAt is AppendStateKey with field indexes.
func AppendStateKeyAt(dst []byte, t Tuple, fields ...int) []byte {
	for i, f := range fields {
		if i > 0 {
			dst = append(dst, 0)
		}
		_, p := t.payload(f)
		dst = append(dst, p...)
	}
	return dst
}
