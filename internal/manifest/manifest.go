// Package manifest reads, checks and writes a component's manifest: what a
// module built with an Ardea SDK says about itself (its SDK's language and
// version, its kind, the streams and fields it emits, the input fields it
// reads by name and its config keys). wasm-sdk/ABI.md ("Optional exports:
// cursor and manifest") defines the JSON; `ardea build` stores it in the
// module's custom section "ardea.manifest", and `ardea run` and `ardea
// submit` check a topology against it.
package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/ardea-dev/ardea/internal/names"
)

// SectionName is the custom section that holds the manifest's JSON.
const SectionName = "ardea.manifest"

// ExportName is the optional export that returns the manifest (package
// moduleread calls it).
const ExportName = "ardea_manifest"

// Format is the manifest format version this package reads and writes.
const Format = 1

// MaxSize bounds a manifest's JSON.
const MaxSize = 1 << 20

// Languages are the SDK languages a manifest may name.
var Languages = []string{"go", "rust", "c", "assemblyscript"}

// Kinds are the component kinds.
var Kinds = []string{"spout", "bolt"}

// Manifest is a component's manifest. A nil Outputs, Inputs or Config means
// "not declared" (then nothing about it is checked); an empty one declares
// none.
type Manifest struct {
	Manifest int      `json:"manifest" yaml:"manifest"`
	SDK      SDK      `json:"sdk" yaml:"sdk"`
	Kind     string   `json:"kind" yaml:"kind"`
	Outputs  []Output `json:"outputs,omitzero" yaml:"outputs,omitempty"`
	Inputs   []string `json:"inputs,omitzero" yaml:"inputs,omitempty"`
	Config   []string `json:"config,omitzero" yaml:"config,omitempty"`
}

// SDK names the SDK a module was built with.
type SDK struct {
	Language string `json:"language" yaml:"language"`
	Version  string `json:"version" yaml:"version"`
}

// Output is one declared output stream with its fields, in order.
type Output struct {
	Stream string   `json:"stream" yaml:"stream"`
	Fields []string `json:"fields" yaml:"fields"`
}

// OutputMap is the declared outputs as a topology writes them (stream ->
// fields); nil when the outputs are not declared.
func (m *Manifest) OutputMap() map[string][]string {
	if m == nil || m.Outputs == nil {
		return nil
	}
	out := make(map[string][]string, len(m.Outputs))
	for _, o := range m.Outputs {
		out[o.Stream] = slices.Clone(o.Fields)
		if out[o.Stream] == nil {
			out[o.Stream] = []string{}
		}
	}
	return out
}

// Decode parses and checks a manifest's JSON strictly: unknown fields, an
// unknown language or kind, a format other than 1, bad or duplicate names
// are errors that say what is wrong.
func Decode(data []byte) (*Manifest, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("manifest: %d bytes, more than the %d a manifest may hold", len(data), MaxSize)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("manifest: %s", jsonProblem(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("manifest: unexpected data after the JSON object")
	}
	if err := m.Check(); err != nil {
		return nil, err
	}
	return &m, nil
}

func jsonProblem(err error) string {
	msg := err.Error()
	if s, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return "unknown field " + s + " (a manifest has manifest, sdk {language, version}, kind, outputs [{stream, fields}], inputs and config)"
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Sprintf("field %s: got a JSON %s, want %s", te.Field, te.Value, jsonType(te.Type.String()))
	}
	if errors.Is(err, io.EOF) {
		return "empty (want a JSON object)"
	}
	return strings.TrimPrefix(msg, "json: ")
}

func jsonType(goType string) string {
	switch {
	case goType == "string":
		return "a string"
	case goType == "int":
		return "an integer"
	case strings.HasPrefix(goType, "[]"):
		return "a list"
	}
	return "an object"
}

// Check checks a manifest's values (Decode calls it).
func (m *Manifest) Check() error {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	switch {
	case m.Manifest == 0:
		bad("manifest: missing (the format version, %d)", Format)
	case m.Manifest > Format:
		bad("manifest: format %d is newer than this ardea reads (%d): update ardea", m.Manifest, Format)
	case m.Manifest != Format:
		bad("manifest: unknown format %d (want %d)", m.Manifest, Format)
	}
	if !slices.Contains(Languages, m.SDK.Language) {
		bad("sdk.language: %s (want %s)", quoteOrMissing(m.SDK.Language), strings.Join(Languages, ", "))
	}
	if m.SDK.Version == "" {
		bad("sdk.version: missing")
	}
	if !slices.Contains(Kinds, m.Kind) {
		bad("kind: %s (want spout or bolt)", quoteOrMissing(m.Kind))
	}
	streams := map[string]bool{}
	for i, o := range m.Outputs {
		switch {
		case o.Stream == "":
			bad("outputs[%d].stream: missing", i)
		case !names.Valid(o.Stream):
			bad("outputs[%d].stream: %q is not a valid stream name (letters, digits, '_' and '-')", i, o.Stream)
		case streams[o.Stream]:
			bad("outputs[%d].stream: stream %q declared twice", i, o.Stream)
		}
		streams[o.Stream] = true
		checkNames(fmt.Sprintf("outputs[%d].fields (stream %q)", i, o.Stream), "field", o.Fields, bad)
	}
	checkNames("inputs", "input field", m.Inputs, bad)
	checkNames("config", "config key", m.Config, bad)
	if m.Kind == "spout" && len(m.Inputs) > 0 {
		bad("inputs: a spout reads no input fields, got %q", m.Inputs)
	}
	if len(errs) > 0 {
		return errors.New("manifest: " + strings.Join(errs, "; "))
	}
	return nil
}

func checkNames(where, what string, list []string, bad func(string, ...any)) {
	seen := map[string]bool{}
	for j, s := range list {
		switch {
		case s == "":
			bad("%s: %s %d is empty", where, what, j)
		case strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }):
			bad("%s: %s %q contains control characters", where, what, s)
		case seen[s]:
			bad("%s: %s %q listed twice", where, what, s)
		}
		seen[s] = true
	}
}

func quoteOrMissing(s string) string {
	if s == "" {
		return "missing"
	}
	return fmt.Sprintf("unknown %q", s)
}

// Encode is the manifest's JSON (as an SDK writes it).
func (m *Manifest) Encode() ([]byte, error) { return json.Marshal(m) }
