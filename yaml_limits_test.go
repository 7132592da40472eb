package ardea

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea/internal/testutil/yamlbomb"
)

func TestParseRefusesMergeKeyBomb(t *testing.T) {
	src := yamlbomb.MergeKey(8) // 10^8 entries expanded; 29.6 s of parse before the bound
	if len(src) > 1000 {
		t.Fatalf("the bomb is %d bytes; the issue's was 751", len(src))
	}
	top, nodes, err := parse([]byte(src), "", "bomb.yaml", MaxSpecNodes, MaxSpecValueBytes)
	if err == nil {
		t.Fatalf("a merge-key bomb of depth 8 parsed (%d components)", len(top.Components))
	}
	if !errors.Is(err, ErrSpecTooLarge) {
		t.Errorf("error does not wrap ErrSpecTooLarge: %v", err)
	}
	for _, want := range []string{"bomb.yaml:", `spout "s"`, "more than 100000 YAML nodes", "ardea.MaxSpecNodes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if len(Problems(err)) != 1 {
		t.Errorf("want exactly one problem, got %d: %v", len(Problems(err)), err)
	}
	if nodes > MaxSpecNodes+1 {
		t.Errorf("the parser read %d nodes; the bound is %d", nodes, MaxSpecNodes)
	}
	// The same document one level shallower than the bound parses.
	if _, _, err := parse([]byte(yamlbomb.MergeKey(4)), "", "ok.yaml", MaxSpecNodes, MaxSpecValueBytes); err != nil {
		t.Errorf("depth 4 (10^4 entries) is refused: %v", err)
	}
}

// An alias of a long scalar listed many times makes a config value of
// gigabytes from a small document; the value bytes are bounded.
func TestParseRefusesAliasValueBomb(t *testing.T) {
	long := strings.Repeat("x", 64<<10)
	refs := strings.TrimSuffix(strings.Repeat("*s, ", 4000), ", ")
	src := "name: v\nx-s: &s " + long + "\nspouts:\n  - name: s\n    module: builtin:generator\n    config: {k: [" + refs + "]}\n"
	_, nodes, err := parse([]byte(src), "", "v.yaml", MaxSpecNodes, MaxSpecValueBytes)
	if !errors.Is(err, ErrSpecTooLarge) || !strings.Contains(err.Error(), "ardea.MaxSpecValueBytes") {
		t.Fatalf("want the value-bytes bound named, got %v", err)
	}
	if nodes > 4100 {
		t.Errorf("read %d nodes", nodes)
	}
}

func TestParseRefusesOversizeDocument(t *testing.T) {
	src := "name: big\nconfig: {topology.pad: " + strings.Repeat("y", MaxSpecBytes) + "}\n"
	_, err := Parse([]byte(src), "", "big.yaml")
	if !errors.Is(err, ErrSpecTooLarge) {
		t.Fatalf("a %d-byte document: got %v", len(src), err)
	}
	for _, want := range []string{"big.yaml:", fmt.Sprint(MaxSpecBytes), "ardea.MaxSpecBytes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

// A document with thousands of problems reports maxProblems of them and
// counts the rest, each quoting at most maxDescribed bytes of its value.
func TestParseBoundsProblems(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: p\nx-l: &l " + strings.Repeat("z", 10000) + "\nspouts:\n")
	for i := range 500 {
		fmt.Fprintf(&b, "  - {name: s%d, module: m.wasm, parallelism: *l}\n", i)
	}
	_, err := Parse([]byte(b.String()), "", "p.yaml")
	if err == nil {
		t.Fatal("parsed")
	}
	probs := Problems(err)
	if len(probs) != maxProblems+1 || !strings.Contains(err.Error(), "400 more problems not shown") {
		t.Errorf("got %d problems, want %d and a count of the rest", len(probs), maxProblems+1)
	}
	if len(err.Error()) > (maxProblems+1)*400 {
		t.Errorf("the error is %d bytes", len(err.Error()))
	}
}

// FuzzParse: whatever the document, Parse neither panics nor reads more
// nodes than its bound, and every error it returns is a list of problems.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"name: a\nspouts:\n  - {name: s, module: s.wasm, outputs: [x]}\nbolts:\n  - {name: b, module: b.wasm, inputs: [s]}\n",
		"name: m\nx-d: &d {a: 1}\nspouts:\n  - name: s\n    module: s.wasm\n    config: {<<: [*d, {b: 2}]}\n",
		yamlbomb.MergeKey(3),
		"name: [\n",
		"a: &a [*a]\n",
		"name: x\nconfig: {k: [1, [2]], j: {x: y}}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const maxNodes = 5000
		top, nodes, err := parse(data, "", "f.yaml", maxNodes, 1<<20)
		if nodes > maxNodes+1 {
			t.Fatalf("read %d nodes, bound %d", nodes, maxNodes)
		}
		if err != nil {
			if len(Problems(err)) == 0 {
				t.Fatalf("error without problems: %v", err)
			}
			return
		}
		if top == nil {
			t.Fatal("no topology and no error")
		}
	})
}
