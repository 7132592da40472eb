package ardea

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea/wasm-sdk/go/internal/tuple"
)

func TestManifest(t *testing.T) {
	r := newRuntime(nil)
	r.register(nil, &BaseBolt{}, []Declaration{
		Reads("line"), Emits("default", "word"), Emits("stats", "n", "bytes"), ConfigKeys("min_length"), ConfigKeys("lang"),
	})
	blob := r.manifestBlob()
	if n := binary.LittleEndian.Uint32(blob); int(n) != len(blob)-4 {
		t.Fatalf("length prefix %d for %d bytes", n, len(blob)-4)
	}
	want := `{"manifest":1,"sdk":{"language":"go","version":"` + SDKVersion + `"},"kind":"bolt",` +
		`"outputs":[{"stream":"default","fields":["word"]},{"stream":"stats","fields":["n","bytes"]}],` +
		`"inputs":["line"],"config":["min_length","lang"]}`
	if got := string(blob[4:]); got != want {
		t.Errorf("manifest\n%s\nwant\n%s", got, want)
	}

	// Nothing declared: outputs, inputs and config are omitted; a field
	// or stream name is escaped as JSON.
	s := newRuntime(nil)
	s.register(&BaseSpout{}, nil, nil)
	if got := string(s.manifestBlob()[4:]); got != `{"manifest":1,"sdk":{"language":"go","version":"`+SDKVersion+`"},"kind":"spout"}` {
		t.Errorf("undeclared spout: %s", got)
	}
	e := newRuntime(nil)
	e.register(&BaseSpout{}, nil, []Declaration{Emits("a\"b\\c\n\x01é", "\xff")})
	var doc struct {
		Outputs []struct {
			Stream string
			Fields []string
		}
	}
	if err := json.Unmarshal(e.manifestBlob()[4:], &doc); err != nil || doc.Outputs[0].Stream != "a\"b\\c\n\x01é" || doc.Outputs[0].Fields[0] != "\uFFFD" {
		t.Errorf("escaped manifest %s: %v %+v", e.manifestBlob()[4:], err, doc)
	}
	// An empty declaration list is declared as empty (a sink bolt).
	k := newRuntime(nil)
	k.register(nil, &BaseBolt{}, []Declaration{Reads("x"), ConfigKeys()})
	if got := string(k.manifestBlob()[4:]); !strings.HasSuffix(got, `"kind":"bolt","inputs":["x"],"config":[]}`) {
		t.Errorf("declared but empty config: %s", got)
	}
}

func TestBadDeclarations(t *testing.T) {
	for _, tc := range []struct {
		bolt  bool
		decls []Declaration
		want  string
	}{
		{true, []Declaration{Emits("")}, "Emits: empty stream name"},
		{true, []Declaration{Emits("a", "x"), Emits("a", "y")}, `stream "a" declared twice`},
		{true, []Declaration{Emits("a", "x", "x")}, `Emits("a"): field "x" declared twice`},
		{false, []Declaration{Reads("x")}, "Reads is for bolts"},
		{true, []Declaration{Reads("x"), Reads("x")}, `Reads: field "x" declared twice`},
		{true, []Declaration{ConfigKeys("")}, "ConfigKeys: empty key name"},
		{true, []Declaration{{}}, "zero Declaration"},
	} {
		func() {
			defer func() {
				if p := recover(); p == nil || !strings.Contains(p.(string), tc.want) {
					t.Errorf("%+v: panic %v, want %q", tc.decls, p, tc.want)
				}
			}()
			r := newRuntime(nil)
			if tc.bolt {
				r.register(nil, &BaseBolt{}, tc.decls)
			} else {
				r.register(&BaseSpout{}, nil, tc.decls)
			}
		}()
	}
}

// Reading a field the tuple does not have fails the tuple with an error
// naming the field and the fields the tuple has.
func TestFieldErrors(t *testing.T) {
	var read func(Tuple)
	x := newHarness(t, nil, &funcBolt{exec: func(tp Tuple, c *BoltCollector) error {
		read(tp)
		return nil
	}})
	ctx := wordContext("w")
	ctx.Inputs[0].Fields = []string{"token", "n"}
	x.prepare(ctx)
	b := batchOf([]tuple.Value{tuple.Str("a"), tuple.Int(1)})
	for _, tc := range []struct {
		read func(Tuple)
		want string
	}{
		{func(tp Tuple) { tp.StringByName("word") }, `ardea: the tuple from split/default has no field "word" (it has fields "token", "n")`},
		{func(tp Tuple) { tp.String(2) }, `ardea: field index 2 is out of range: the tuple from split/default has fields "token", "n"`},
		{func(tp Tuple) { tp.BytesView(-1) }, `ardea: field index -1 is out of range: the tuple from split/default has fields "token", "n"`},
		{func(tp Tuple) { StateKey(tp, "word") }, `ardea: the tuple from split/default has no field "word" (it has fields "token", "n")`},
	} {
		read = tc.read
		x.h.Errors = nil
		x.mustFail(x.execute(b), "Execute: tuple 1 from split/default task 7: panic: "+tc.want+" at ")
		if !strings.Contains(x.h.Errors[0], "TestFieldErrors") {
			t.Errorf("%q does not name the test's frame", x.h.Errors[0])
		}
	}
	// A declared field the tuple lacks (fewer values than fields).
	read = func(tp Tuple) { tp.IntByName("n") }
	x.h.Errors = nil
	x.mustFail(x.execute(batchOf([]tuple.Value{tuple.Str("a")})), `the tuple from split/default declares field "n" at index 1 but has 1 values`)
	var fe *FieldError
	if err := error(&PanicError{Value: &FieldError{Name: "x", Index: -1}}); !errors.As(err, &fe) || fe.Name != "x" {
		t.Errorf("PanicError does not unwrap to its FieldError")
	}
}
