package ardea

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea/internal/plan"
)

var update = flag.Bool("update", false, "rewrite golden files")

// equalTopology compares two topologies ignoring where they came from.
func equalTopology(t *testing.T, got, want *Topology) {
	t.Helper()
	g, w := got.Clone(), want.Clone()
	for _, x := range []*Topology{g, w} {
		x.src, x.File, x.Dir = nil, "", ""
	}
	if !reflect.DeepEqual(g, w) {
		gb, _ := g.Format()
		wb, _ := w.Format()
		t.Fatalf("topologies differ\n--- got\n%s\n--- want\n%s\ngot  %#v\nwant %#v", gb, wb, g, w)
	}
}

func mustLoad(t *testing.T, path string) *Topology {
	t.Helper()
	top, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return top
}

func TestGoldenFormat(t *testing.T) {
	files, _ := filepath.Glob("testdata/topologies/*.yaml")
	if len(files) == 0 {
		t.Fatal("no fixtures")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			top := mustLoad(t, f)
			got, err := top.Format()
			if err != nil {
				t.Fatal(err)
			}
			golden := strings.TrimSuffix(f, ".yaml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if string(got) != string(want) {
				t.Errorf("Format(%s) differs from %s (go test -update rewrites it)\n--- got\n%s\n--- want\n%s", f, golden, got, want)
			}
			// The canonical form parses back to the same topology.
			again, err := Parse(got, top.Dir, golden)
			if err != nil {
				t.Fatal(err)
			}
			equalTopology(t, again, top)
		})
	}
}

func TestFormatTrickyValuesRoundTrip(t *testing.T) {
	b := NewBuilder("tricky")
	b.Set("topology.x", "null")
	cb := b.Spout("s", "s.wasm").Output("default", "f")
	for i, v := range []string{"", "~", "null", "true", "0x10", "1e3", "a: b", "#c", " lead", "trail ", "- x", "{x}", "multi\nline", `q"uote`, "'", "*alias", "&anchor", "@at", "%p", "yes"} {
		cb.Config(string(rune('a'+i)), v)
	}
	top := b.t
	out, err := top.Format()
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse(out, "", "tricky.yaml")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	equalTopology(t, again, top)
}

func TestModuleKind(t *testing.T) {
	for _, tc := range []struct {
		module string
		want   ModuleKind
		name   string
	}{
		{"", ModuleNone, ""},
		{"bolt.wasm", ModuleWasm, ""},
		{"../mods/bolt.wasm", ModuleWasm, ""},
		{"split", ModuleSource, ""},
		{"./split/", ModuleSource, ""},
		{"builtin:file", ModuleBuiltin, "file"},
		{"builtin:", ModuleBuiltin, ""},
	} {
		c := &Component{Module: tc.module}
		if got := c.ModuleKind(); got != tc.want {
			t.Errorf("ModuleKind(%q) = %v, want %v", tc.module, got, tc.want)
		}
		if got := c.BuiltinName(); got != tc.name {
			t.Errorf("BuiltinName(%q) = %q, want %q", tc.module, got, tc.name)
		}
	}
}

func TestResolvedModule(t *testing.T) {
	dir := t.TempDir()
	top := &Topology{Dir: dir}
	for _, tc := range []struct{ module, want string }{
		{"split", filepath.Join(dir, "split")},
		{"x/b.wasm", filepath.Join(dir, "x", "b.wasm")},
		{"../b.wasm", filepath.Join(filepath.Dir(dir), "b.wasm")},
		{"/abs/b.wasm", "/abs/b.wasm"},
		{"builtin:file", ""},
	} {
		if got := top.ResolvedModule(&Component{Module: tc.module}); got != tc.want {
			t.Errorf("ResolvedModule(%q) = %q, want %q", tc.module, got, tc.want)
		}
	}
	// LoadFile resolves against the file's directory, whatever the cwd.
	top = mustLoad(t, "testdata/topologies/wordcount.yaml")
	abs, _ := filepath.Abs("testdata/topologies/split")
	if got := top.ResolvedModule(top.Component("split")); got != abs {
		t.Errorf("ResolvedModule(split) = %q, want %q", got, abs)
	}
}

func TestGroupingNamesMatchPlan(t *testing.T) {
	want := []plan.Grouping{plan.Shuffle, plan.Fields, plan.All, plan.Global, plan.Direct, plan.None, plan.LocalOrShuffle}
	if len(want) != len(groupings) {
		t.Fatalf("Groupings = %v, plan has %v", groupings, want)
	}
	for i, g := range want {
		if string(g) != groupings[i] {
			t.Errorf("Groupings[%d] = %q, plan says %q", i, groupings[i], g)
		}
	}
}

func TestStreamNamesDefaultFirst(t *testing.T) {
	c := &Component{Outputs: map[string][]string{"b": nil, "default": nil, "a": nil, "z": nil}}
	if got, want := c.StreamNames(), []string{"default", "a", "b", "z"}; !slices.Equal(got, want) {
		t.Errorf("StreamNames = %v, want %v", got, want)
	}
}

func TestApplyBuiltinOutputs(t *testing.T) {
	top := mustLoad(t, "testdata/topologies/wordcount.yaml")
	builtins := func(kind, name string) (map[string][]string, bool) {
		if name != "file" {
			return nil, false
		}
		if kind == "spout" {
			return map[string][]string{"default": {"line"}}, true
		}
		return nil, true
	}
	top.ApplyBuiltinOutputs(builtins)
	if got := top.Component("lines").Outputs; !reflect.DeepEqual(got, map[string][]string{"default": {"line"}}) {
		t.Errorf("lines outputs = %v", got)
	}
	if got := top.Component("out").Outputs; got == nil || len(got) != 0 {
		t.Errorf("out outputs = %#v, want empty non-nil", got)
	}
	if got := top.Component("split").Outputs; !reflect.DeepEqual(got, map[string][]string{"default": {"word"}}) {
		t.Errorf("split outputs changed: %v", got)
	}
	if err := top.Validate(ValidateOptions{SkipModuleCheck: true, Builtins: builtins}); err != nil {
		t.Fatal(err)
	}
}

func TestCloneIsDeep(t *testing.T) {
	top := mustLoad(t, "testdata/topologies/features.yaml")
	c := top.Clone()
	equalTopology(t, c, top)
	c.Config["topology.x"] = "1"
	c.Components[0].Config["retries"] = "9"
	c.Components[0].Outputs["default"][0] = "changed"
	c.Components[3].Inputs[0].Fields[0] = "changed"
	if top.Config["topology.x"] != "" || top.Components[0].Config["retries"] != "3" ||
		top.Components[0].Outputs["default"][0] != "id" || top.Components[3].Inputs[0].Fields[0] != "id" {
		t.Error("Clone shares state with the original")
	}
	// Positions follow the clone, so its problems still name lines.
	c.Components[1].Parallelism = 0
	ps := Problems(c.Validate(ValidateOptions{SkipModuleCheck: true}))
	if len(ps) != 2 || ps[0].Line != 28 || ps[1].Line != 43 {
		t.Fatalf("problems on clone = %v", ps)
	}
}

func TestMaxKeyGroups(t *testing.T) {
	for v, want := range map[string]int{"": defaultMaxKeyGroups, "64": 64, " 8 ": 8, "0": defaultMaxKeyGroups, "x": defaultMaxKeyGroups} {
		top := &Topology{Config: map[string]string{}}
		if v != "" {
			top.Config[settingMaxKeyGroups] = v
		}
		if got := top.MaxKeyGroups(); got != want {
			t.Errorf("MaxKeyGroups(%q) = %d, want %d", v, got, want)
		}
	}
}
