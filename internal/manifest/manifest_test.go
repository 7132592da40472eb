package manifest

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea/internal/wasmbin"
)

const goodJSON = `{"manifest":1,"sdk":{"language":"go","version":"0.1.0"},"kind":"bolt",` +
	`"outputs":[{"stream":"default","fields":["word"]}],"inputs":["line"],"config":["min_length"]}`

func TestDecode(t *testing.T) {
	m, err := Decode([]byte(goodJSON))
	if err != nil {
		t.Fatal(err)
	}
	if m.SDK.Language != "go" || m.Kind != "bolt" || len(m.Outputs) != 1 || m.Outputs[0].Fields[0] != "word" ||
		m.Inputs[0] != "line" || m.Config[0] != "min_length" {
		t.Fatalf("decoded %+v", m)
	}
	if got := m.OutputMap(); len(got) != 1 || got["default"][0] != "word" {
		t.Fatalf("OutputMap = %v", got)
	}
	// Not declared: nil, so nothing is checked.
	m, err = Decode([]byte(`{"manifest":1,"sdk":{"language":"rust","version":"1"},"kind":"spout","outputs":null}`))
	if err != nil {
		t.Fatal(err)
	}
	if m.Outputs != nil || m.Inputs != nil || m.Config != nil || m.OutputMap() != nil {
		t.Fatalf("undeclared parts decoded as %+v", m)
	}
	// Declared empty: a sink bolt emitting nothing.
	m, err = Decode([]byte(`{"manifest":1,"sdk":{"language":"c","version":"1"},"kind":"bolt","outputs":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	if m.Outputs == nil || m.OutputMap() == nil {
		t.Fatalf("declared-empty outputs decoded as %+v", m)
	}
	// Encode round-trips.
	b, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if m2, err := Decode(b); err != nil || m2.Outputs == nil {
		t.Fatalf("round trip of %s: %+v, %v", b, m2, err)
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, tc := range []struct{ json, want string }{
		{`{"manifest":1,"sdk":{"language":"cobol","version":"1"},"kind":"bolt"}`, `sdk.language: unknown "cobol" (want go, rust, c, assemblyscript)`},
		{`{"manifest":1,"sdk":{"language":"go","version":"1"},"kind":"sink"}`, `kind: unknown "sink" (want spout or bolt)`},
		{`{"manifest":1,"sdk":{"language":"go","version":"1"}}`, `kind: missing`},
		{`{"manifest":1,"sdk":{"language":"go","version":"1"},"kind":"bolt","output":[]}`, `unknown field "output"`},
		{`{"manifest":1,"sdk":{"language":"go","version":"1","lang":"go"},"kind":"bolt"}`, `unknown field "lang"`},
		{`{"manifest":1,"sdk":{"language":"go","version":"1"},"kind":"bolt","outputs":[{"stream":"a","fields":["x"]},{"stream":"a","fields":["y"]}]}`, `stream "a" declared twice`},
		{`{"manifest":1,"sdk":{"language":"go","version":"1"},"kind":"bolt","outputs":[{"stream":"a","fields":["x","x"]}]}`, `field "x" listed twice`},
		{`{"manifest":1,"sdk":{"language":"go","version":"1"},"kind":"bolt","outputs":[{"stream":"a b","fields":[]}]}`, `"a b" is not a valid stream name`},
		{`{"manifest":1,"sdk":{"language":"go","version":"1"},"kind":"bolt","inputs":["w",""]}`, `input field 1 is empty`},
		{`{"manifest":1,"sdk":{"language":"go","version":"1"},"kind":"bolt","config":["k","k"]}`, `config key "k" listed twice`},
		{`{"manifest":2,"sdk":{"language":"go","version":"1"},"kind":"bolt"}`, `format 2 is newer than this ardea reads (1)`},
		{`{"sdk":{"language":"go","version":"1"},"kind":"bolt"}`, `manifest: missing`},
		{`{"manifest":1,"sdk":{"language":"go"},"kind":"bolt"}`, `sdk.version: missing`},
		{`{"manifest":"1"}`, `field manifest: got a JSON string, want an integer`},
		{goodJSON + `{}`, `unexpected data after the JSON object`},
		{``, `empty`},
		{`[1]`, `cannot unmarshal array`},
	} {
		_, err := Decode([]byte(tc.json))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Decode(%s) = %v, want an error containing %q", tc.json, err, tc.want)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(goodJSON))
	f.Add([]byte(`{"manifest":1,"sdk":{"language":"rust","version":"0"},"kind":"spout","outputs":null}`))
	f.Add([]byte(`{"manifest":1,"outputs":[{"stream":"","fields":[""]}]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Decode(data)
		if err != nil {
			if m != nil {
				t.Fatalf("Decode returned a manifest with an error")
			}
			return
		}
		// Whatever decodes is valid, and survives a round trip.
		if err := m.Check(); err != nil {
			t.Fatalf("decoded manifest fails Check: %v", err)
		}
		b, err := m.Encode()
		if err != nil {
			t.Fatal(err)
		}
		m2, err := Decode(b)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", b, err)
		}
		b2, _ := m2.Encode()
		if !bytes.Equal(b, b2) {
			t.Fatalf("round trip changed %s into %s", b, b2)
		}
	})
}

// The C word-count split module: built with the C SDK, which exports
// ardea_manifest; the committed module has no manifest section.
const fixture = "../../examples/wordcount/c/split.wasm"

func TestSectionRoundTrip(t *testing.T) {
	mod, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := Section(mod); ok || err != nil {
		t.Fatalf("fixture already has a manifest section (%v)", err)
	}
	out, err := WithSection(mod, []byte(goodJSON))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out[:len(mod)], mod) {
		t.Fatal("WithSection changed the module's bytes before the appended section")
	}
	data, ok, err := Section(out)
	if err != nil || !ok || string(data) != goodJSON {
		t.Fatalf("Section = %q, %v, %v", data, ok, err)
	}
	// Writing again replaces the section; the rest stays byte-identical.
	again, err := WithSection(out, []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again[:len(mod)], mod) {
		t.Fatal("rewriting the section changed the module")
	}
	if data, _, _ := Section(again); string(data) != `{}` {
		t.Fatalf("rewritten section = %q", data)
	}
	if _, _, err := Section([]byte("not wasm")); err == nil {
		t.Fatal("Section accepted bytes that are not wasm")
	}
	if _, _, err := Section(append(append([]byte(nil), wasmbin.Header...), 0, 0x7f)); err == nil {
		t.Fatal("Section accepted a section running past the end")
	}
}

func TestExports(t *testing.T) {
	mod, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := Exports(mod)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"memory", "ardea_abi_version", "ardea_buffer", "ardea_prepare", "ardea_execute", ExportName} {
		if _, ok := ex[name]; !ok {
			t.Errorf("export %s not listed (%v)", name, ex)
		}
	}
	if ex["memory"] != 2 || ex["ardea_execute"] != 0 {
		t.Errorf("export kinds: memory %d, ardea_execute %d", ex["memory"], ex["ardea_execute"])
	}
}

// FuzzModuleBytes: whatever the bytes, reading sections and exports and
// appending the manifest section never panic, and an appended section is
// read back unchanged.
func FuzzModuleBytes(f *testing.F) {
	if mod, err := os.ReadFile(fixture); err == nil {
		f.Add(mod[:min(len(mod), 4096)])
	}
	f.Add(append([]byte(nil), wasmbin.Header...))
	f.Add(append(append([]byte(nil), wasmbin.Header...), 0, 5, 4, 'a', 'b', 'c', 'd'))
	f.Add([]byte("\x00asm\x01\x00\x00\x00\x07\xff\xff\xff\xff\x0f"))
	f.Fuzz(func(t *testing.T, mod []byte) {
		_, _, serr := Section(mod)
		_, _ = Exports(mod)
		out, err := WithSection(mod, []byte(goodJSON))
		if err != nil {
			return
		}
		if serr == nil && !bytes.HasPrefix(out, []byte(wasmbin.Header)) {
			t.Fatal("WithSection lost the header")
		}
		data, ok, err := Section(out)
		if err != nil || !ok || string(data) != goodJSON {
			t.Fatalf("appended section read back as %q, %v, %v", data, ok, err)
		}
	})
}
