package daemon_test

import (
	"testing"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/examples/wordcount"
)

// wcSpec is the word count most of the daemon's tests submit, formatted:
// the "lines" spout that spout adds, split (splitPar instances, shuffle),
// count (2 instances, by word) over two containers and, when out is set,
// a builtin:file sink of the counts at out.
func wcSpec(t *testing.T, name string, splitPar int, spout func(*ardea.Builder), out string) string {
	t.Helper()
	b := ardea.NewBuilder(name)
	b.Set("topology.packing.containers", "2")
	spout(b)
	b.Bolt("split", "split.wasm").Parallelism(splitPar).Shuffle("lines").Output("default", "word")
	b.Bolt("count", "count.wasm").Parallelism(2).Fields("split", "word").Output("default", "word", "count")
	if out != "" {
		b.Bolt("out", "builtin:file").Config("path", out).Fields("count", "word")
	}
	top, err := b.BuildWith(ardea.ValidateOptions{SkipModuleCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := top.Format()
	if err != nil {
		t.Fatal(err)
	}
	return string(spec)
}

// fileSpout is a wcSpec spout: builtin:file reading path.
func fileSpout(path string) func(*ardea.Builder) {
	return func(b *ardea.Builder) { b.Spout("lines", "builtin:file").Config("path", path) }
}

// generatorSpout is a wcSpec spout: builtin:generator at rate lines/s,
// count per task (0: endless).
func generatorSpout(rate, count string) func(*ardea.Builder) {
	return func(b *ardea.Builder) {
		b.Spout("lines", "builtin:generator").Config("rate", rate).Config("count", count)
	}
}

// wcModules is the Go word count's split and count modules by component.
func wcModules(t *testing.T) map[string][]byte {
	t.Helper()
	split, count, err := wordcount.Modules("go")
	if err != nil {
		t.Fatal(err)
	}
	return map[string][]byte{"split": split, "count": count}
}
