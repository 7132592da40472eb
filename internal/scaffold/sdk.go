package scaffold

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/ardea-dev/ardea/internal/build"
	assdk "github.com/ardea-dev/ardea/wasm-sdk/assemblyscript"
	csdk "github.com/ardea-dev/ardea/wasm-sdk/c"
	gosdk "github.com/ardea-dev/ardea/wasm-sdk/go"
	rustsdk "github.com/ardea-dev/ardea/wasm-sdk/rust"
)

// SDK is one guest SDK as this binary carries it.
type SDK struct {
	Lang build.Language
	// Version is the SDK's own version (its go.mod replace target, its
	// Cargo.toml, package.json or header).
	Version string
	// FS holds the SDK exactly as it is written out: a Go module, a Rust
	// crate, an npm package, or the C header, source and test harness.
	FS fs.FS
}

// sdkFS is the embedded copy of each SDK, rooted where it is written out.
var sdkFS = map[build.Language]func() fs.FS{
	build.Go:             gosdk.SourceFS,
	build.Rust:           func() fs.FS { return rustsdk.FS },
	build.C:              func() fs.FS { return csdk.FS },
	build.AssemblyScript: func() fs.FS { return assdk.FS },
}

// Files lists the SDK's files, slash-separated, in lexical order.
func (s SDK) Files() ([]string, error) {
	var names []string
	err := fs.WalkDir(s.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, p)
		}
		return err
	})
	return names, err
}

// ParseLanguage reads a --lang value; "as" is short for assemblyscript.
func ParseLanguage(s string) (build.Language, error) {
	l := build.Language(strings.ToLower(strings.TrimSpace(s)))
	if l == "as" {
		l = build.AssemblyScript
	}
	if _, ok := sdkFS[l]; ok {
		return l, nil
	}
	names := make([]string, len(build.Languages))
	for i, l := range build.Languages {
		names[i] = string(l)
	}
	return "", fmt.Errorf("unknown language %q: want one of %s", s, strings.Join(names, ", "))
}

// SDKFor returns the SDK of lang.
func SDKFor(lang build.Language) (SDK, error) {
	f, ok := sdkFS[lang]
	if !ok {
		_, err := ParseLanguage(string(lang))
		return SDK{}, err
	}
	fsys := f()
	v, err := sdkVersion(lang, fsys)
	if err != nil {
		return SDK{}, fmt.Errorf("%s SDK: %w", lang, err)
	}
	return SDK{Lang: lang, Version: v, FS: fsys}, nil
}

// SDKs lists every SDK, in build.Languages order.
func SDKs() ([]SDK, error) {
	var out []SDK
	for _, l := range build.Languages {
		s, err := SDKFor(l)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

var (
	cargoVersion = regexp.MustCompile(`^version\s*=\s*"([^"]+)"`)
	cVersion     = regexp.MustCompile(`#define\s+ARDEA_SDK_VERSION\s+"([^"]+)"`)
	goVersion    = regexp.MustCompile(`(?m)^\s*(?:const\s+)?SDKVersion\s*=\s*"([^"]+)"`)
)

// sdkVersion reads the SDK's version from where its language keeps it.
func sdkVersion(lang build.Language, fsys fs.FS) (string, error) {
	switch lang {
	case build.Rust:
		f, err := fsys.Open("Cargo.toml")
		if err != nil {
			return "", err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		inPackage := false
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if strings.HasPrefix(line, "[") {
				inPackage = line == "[package]"
				continue
			}
			if m := cargoVersion.FindStringSubmatch(line); inPackage && m != nil {
				return m[1], nil
			}
		}
		return "", errors.New("Cargo.toml has no [package] version")
	case build.AssemblyScript:
		b, err := fs.ReadFile(fsys, "package.json")
		if err != nil {
			return "", err
		}
		var p struct{ Version string }
		if err := json.Unmarshal(b, &p); err != nil || p.Version == "" {
			return "", fmt.Errorf("package.json has no version (%v)", err)
		}
		return p.Version, nil
	case build.C:
		return grepVersion(fsys, "include/ardea.h", cVersion)
	case build.Go:
		matches, err := fs.Glob(fsys, "*.go")
		if err != nil {
			return "", err
		}
		for _, m := range matches {
			if v, err := grepVersion(fsys, m, goVersion); err == nil {
				return v, nil
			}
		}
		return "", errors.New("no SDKVersion constant in the Go SDK")
	}
	return "", fmt.Errorf("unknown language %q", lang)
}

func grepVersion(fsys fs.FS, name string, re *regexp.Regexp) (string, error) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return "", err
	}
	m := re.FindSubmatch(b)
	if m == nil {
		return "", fmt.Errorf("%s does not say the SDK version", name)
	}
	return string(m[1]), nil
}

// Export writes the SDK of lang into dir, creating it. It refuses to
// overwrite a file that exists unless force is set, and names the file.
// It returns the paths written, relative to dir.
func Export(lang build.Language, dir string, force bool) ([]string, error) {
	sdk, err := SDKFor(lang)
	if err != nil {
		return nil, err
	}
	var files []file
	if err := collect(sdk.FS, ".", &files, func(rel string, b []byte) (string, []byte, error) { return rel, b, nil }); err != nil {
		return nil, err
	}
	return writeFiles(dir, files, force)
}

// file is one file to write, relative to the target folder.
type file struct {
	rel  string
	data []byte
}

// writeFiles writes files under dir. Nothing is written when a target
// exists and force is not set: every target is checked first, so a
// refusal leaves dir as it was.
func writeFiles(dir string, files []file, force bool) ([]string, error) {
	if !force {
		for _, f := range files {
			dst := filepath.Join(dir, filepath.FromSlash(f.rel))
			if _, err := os.Lstat(dst); err == nil {
				return nil, fmt.Errorf("%s exists: nothing was written (remove it, or use --force to write over it)", dst)
			}
		}
	}
	var written []string
	for _, f := range files {
		dst := filepath.Join(dir, filepath.FromSlash(f.rel))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return written, err
		}
		mode := os.FileMode(0o644)
		if path.Ext(f.rel) == ".sh" {
			mode = 0o755
		}
		if err := os.WriteFile(dst, f.data, mode); err != nil {
			return written, err
		}
		written = append(written, f.rel)
	}
	return written, nil
}
