package ardea

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// SDKVersion is this SDK's version, written into every module's manifest.
const SDKVersion = "0.1.0"

// A Declaration states, at registration, something the component does:
// a stream it emits with its fields (Emits), an input field it reads by
// name (Reads) or a config key it reads (ConfigKeys). They make up the
// module's manifest (wasm-sdk/ABI.md, "Manifest"), which ardea build
// stores in the module, ardea inspect prints, and ardea run and submit
// check the topology against before anything starts. Declaring is
// optional; what is declared is checked. Without any Emits the topology's
// outputs: are used unchecked.
type Declaration struct {
	what  declKind
	name  string   // Emits: the stream
	names []string // the fields or keys
}

type declKind uint8

const (
	declEmits declKind = iota + 1
	declReads
	declConfig
)

// Emits declares an output stream and its fields, in order: the values of
// every emit on stream. Declare each stream the component emits on (the
// usual one is "default").
func Emits(stream string, fields ...string) Declaration {
	return Declaration{what: declEmits, name: stream, names: fields}
}

// Reads declares input fields a bolt reads by name (Tuple.StringByName and
// the other ByName accessors, StateKey): each of its inputs must carry
// them.
func Reads(fields ...string) Declaration { return Declaration{what: declReads, names: fields} }

// ConfigKeys declares the config keys the component reads.
func ConfigKeys(keys ...string) Declaration { return Declaration{what: declConfig, names: keys} }

// manifest is what a component declared.
type manifest struct {
	bolt     bool
	outputs  []Stream // nil: not declared
	inputs   []string // nil: not declared
	config   []string // nil: not declared
	declared bool     // the component is registered
}

func newManifest(bolt bool, decls []Declaration) (manifest, error) {
	m := manifest{bolt: bolt, declared: true}
	for _, d := range decls {
		switch d.what {
		case declEmits:
			if d.name == "" {
				return m, errors.New("Emits: empty stream name")
			}
			for _, o := range m.outputs {
				if o.Name == d.name {
					return m, fmt.Errorf("Emits: stream %q declared twice", d.name)
				}
			}
			if err := distinct("Emits("+strconv.Quote(d.name)+")", "field", d.names); err != nil {
				return m, err
			}
			m.outputs = append(m.outputs, Stream{Name: d.name, Fields: append([]string{}, d.names...)})
		case declReads:
			if !bolt {
				return m, errors.New("Reads: a spout has no input (Reads is for bolts)")
			}
			m.inputs = append(nonNil(m.inputs), d.names...)
			if err := distinct("Reads", "field", m.inputs); err != nil {
				return m, err
			}
		case declConfig:
			m.config = append(nonNil(m.config), d.names...)
			if err := distinct("ConfigKeys", "key", m.config); err != nil {
				return m, err
			}
		default:
			return m, errors.New("a zero Declaration (use Emits, Reads or ConfigKeys)")
		}
	}
	return m, nil
}

// nonNil makes a declared but empty list non-nil (it is then written).
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func distinct(what, noun string, names []string) error {
	for i, n := range names {
		if n == "" {
			return fmt.Errorf("%s: empty %s name", what, noun)
		}
		for _, prev := range names[:i] {
			if prev == n {
				return fmt.Errorf("%s: %s %q declared twice", what, noun, n)
			}
		}
	}
	return nil
}

// json is the manifest in ABI.md's format.
func (m *manifest) json() []byte {
	b := []byte(`{"manifest":1,"sdk":{"language":"go","version":`)
	b = appendJSONString(b, SDKVersion)
	b = append(b, '}')
	if m.declared {
		kind := "spout"
		if m.bolt {
			kind = "bolt"
		}
		b = append(b, `,"kind":`...)
		b = appendJSONString(b, kind)
	}
	if m.outputs != nil {
		b = append(b, `,"outputs":[`...)
		for i, o := range m.outputs {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"stream":`...)
			b = appendJSONString(b, o.Name)
			b = append(b, `,"fields":`...)
			b = appendJSONStrings(b, o.Fields)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if m.inputs != nil {
		b = append(b, `,"inputs":`...)
		b = appendJSONStrings(b, m.inputs)
	}
	if m.config != nil {
		b = append(b, `,"config":`...)
		b = appendJSONStrings(b, m.config)
	}
	return append(b, '}')
}

// manifestBlob is the ardea_manifest export's answer: u32 length, then the
// JSON.
func (r *runtime) manifestBlob() []byte {
	j := r.manifest.json()
	return append(binary.LittleEndian.AppendUint32(make([]byte, 0, 4+len(j)), uint32(len(j))), j...)
}

func appendJSONStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, s)
	}
	return append(b, ']')
}

// appendJSONString appends s as a JSON string (invalid UTF-8 as U+FFFD).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', byte(c))
		case c < 0x20 || c == 0x2028 || c == 0x2029:
			b = append(b, '\\', 'u', hex[c>>12&0xf], hex[c>>8&0xf], hex[c>>4&0xf], hex[c&0xf])
		default:
			b = utf8.AppendRune(b, c)
		}
	}
	return append(b, '"')
}
