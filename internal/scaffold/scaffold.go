// Package scaffold creates component projects (`ardea new`) and writes
// copies of the guest SDKs this binary carries (`ardea sdk export`).
//
// A project is the rendering of templates/<language>/<kind>/ (see
// templates/README.md) plus the language's SDK in the project's
// ardea-sdk/ folder, which the project's build file points at, so a new
// project tests and builds with no registry access. Nothing here keeps
// state or starts goroutines.
package scaffold

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"

	"github.com/ardea-dev/ardea/internal/build"
)

// Kind is what a project's component is.
type Kind string

const (
	Spout Kind = "spout"
	Bolt  Kind = "bolt"
)

// ParseKind reads a kind argument.
func ParseKind(s string) (Kind, error) {
	switch k := Kind(strings.ToLower(s)); k {
	case Spout, Bolt:
		return k, nil
	}
	return "", fmt.Errorf("unknown component kind %q: want spout or bolt", s)
}

// SDKDir is the folder of a project that holds its copy of the SDK.
const SDKDir = "ardea-sdk"

//go:embed all:templates
var templates embed.FS

// Data is what a template sees.
type Data struct {
	Name       string // as given: my-upper
	Snake      string // my_upper
	Ident      string // MyUpper
	SDKDir     string // ardea-sdk
	SDKVersion string
	Lang       build.Language
	Kind       Kind
}

// Options of New.
type Options struct {
	Kind Kind
	Name string
	Lang build.Language
	// Dir is the project folder to create (default ./Name). It may exist
	// if it is empty.
	Dir string
}

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`)

// ValidName says why name cannot name a component project, or nil.
func ValidName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("component name %q: use a lower-case letter, then up to 62 lower-case letters, digits, '-' or '_' (it names the module, the topology and, in Go, Rust and C, identifiers)", name)
	}
	return nil
}

// Project is what New made.
type Project struct {
	Dir   string   // the project folder
	Files []string // written, relative to Dir, in order
	Data  Data
}

// New creates a project. It writes nothing when the folder has files in
// the way, and names the first one.
func New(o Options) (Project, error) {
	if err := ValidName(o.Name); err != nil {
		return Project{}, err
	}
	if o.Kind != Spout && o.Kind != Bolt {
		return Project{}, fmt.Errorf("unknown component kind %q: want spout or bolt", o.Kind)
	}
	sdk, err := SDKFor(o.Lang)
	if err != nil {
		return Project{}, err
	}
	dir := o.Dir
	if dir == "" {
		dir = o.Name
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return Project{}, fmt.Errorf("project folder %s exists and is not empty: choose another --dir", dir)
	}
	d := Data{
		Name: o.Name, Snake: strings.ReplaceAll(o.Name, "-", "_"), Ident: ident(o.Name),
		SDKDir: SDKDir, SDKVersion: sdk.Version, Lang: o.Lang, Kind: o.Kind,
	}
	root := "templates/" + string(o.Lang) + "/" + string(o.Kind)
	if _, err := fs.Stat(templates, root); err != nil {
		return Project{}, fmt.Errorf("no %s %s template in this binary", o.Lang, o.Kind)
	}
	var files []file
	if err := collect(templates, root, &files, func(rel string, b []byte) (string, []byte, error) {
		return render(rel, b, d)
	}); err != nil {
		return Project{}, err
	}
	if err := collect(sdk.FS, ".", &files, func(rel string, b []byte) (string, []byte, error) {
		return SDKDir + "/" + rel, b, nil
	}); err != nil {
		return Project{}, err
	}
	written, err := writeFiles(dir, files, false)
	if err != nil {
		return Project{}, err
	}
	return Project{Dir: dir, Files: written, Data: d}, nil
}

func collect(fsys fs.FS, root string, files *[]file, conv func(rel string, b []byte) (string, []byte, error)) error {
	return fs.WalkDir(fsys, root, func(p string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		rel := p
		if root != "." {
			rel = strings.TrimPrefix(p, root+"/")
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		rel, b, err = conv(rel, b)
		if err != nil {
			return err
		}
		*files = append(*files, file{rel, b})
		return nil
	})
}

// render runs a .tmpl file through text/template; file names may hold
// template actions too ({{.Name}}.c).
func render(rel string, b []byte, d Data) (string, []byte, error) {
	var nb bytes.Buffer
	nt, err := template.New(rel).Parse(rel)
	if err != nil {
		return "", nil, fmt.Errorf("template name %s: %w", rel, err)
	}
	if err := nt.Execute(&nb, d); err != nil {
		return "", nil, fmt.Errorf("template name %s: %w", rel, err)
	}
	rel = nb.String()
	if !strings.HasSuffix(rel, ".tmpl") {
		return rel, b, nil
	}
	t, err := template.New(rel).Option("missingkey=error").Parse(string(b))
	if err != nil {
		return "", nil, fmt.Errorf("template %s: %w", rel, err)
	}
	var out bytes.Buffer
	if err := t.Execute(&out, d); err != nil {
		return "", nil, fmt.Errorf("template %s: %w", rel, err)
	}
	return strings.TrimSuffix(rel, ".tmpl"), out.Bytes(), nil
}

// ident makes a CamelCase identifier of a project name: my-upper_2 ->
// MyUpper2.
func ident(name string) string {
	var b strings.Builder
	for _, part := range strings.FieldsFunc(name, func(r rune) bool { return r == '-' || r == '_' }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

// Commands are the commands a project's README gives, per language and
// kind: test, build, a bounded local run (the topology as generated ends
// with its input), then the live path: the topology submitted to `ardea
// local` so that it runs until stopped (a bolt's file spout follows
// input.txt; a spout's count 0 never ends), a new build swapped in, and
// the topology killed.
type Commands struct {
	Test   string
	Build  string
	Run    string
	Submit string
	Swap   string
	Kill   string
}

// CommandsFor returns what to run in a new project of lang and kind.
func CommandsFor(lang build.Language, kind Kind, name string) Commands {
	c := Commands{Build: "ardea build . -o " + name + ".wasm", Run: "ardea run topology.yaml",
		Submit: "ardea submit topology.yaml --set lines.follow=true",
		Swap:   "ardea swap " + name + " " + name + " " + name + ".wasm",
		Kill:   "ardea kill " + name}
	if kind == Spout {
		c.Submit = "ardea submit topology.yaml --set " + name + ".count=0"
	}
	switch lang {
	case build.Go:
		c.Test = "go test ./..."
	case build.Rust:
		c.Test = "cargo test --offline"
	case build.C:
		c.Test = "make test"
	case build.AssemblyScript:
		// --prefer-offline: the compiler from npm's cache, downloaded once
		// when the cache lacks it (--offline fails on an empty cache).
		c.Test = "npm install --prefer-offline --no-audit --no-fund && npm test"
	}
	return c
}

// Abs is dir made absolute for messages.
func Abs(dir string) string {
	if a, err := filepath.Abs(dir); err == nil {
		return a
	}
	return dir
}
