package daemon

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/internal/manifest"
	"github.com/ardea-dev/ardea/internal/manifest/moduleread"
)

// moduleLanguages caches the source language of uploaded modules by
// version (sha256): a module's bytes never change under its version.
type moduleLanguages struct {
	mu sync.Mutex
	m  map[string]string
}

// languageOf returns version's language from its producers section, or
// "wasm" when the module does not say (or cannot be read).
func (d *Daemon) languageOf(ctx context.Context, sp *space, version string) string {
	d.langs.mu.Lock()
	l, ok := d.langs.m[version]
	d.langs.mu.Unlock()
	if ok {
		return l
	}
	if sp == nil {
		return "wasm"
	}
	data, err := sp.store.GetArtifact(ctx, version)
	if err != nil {
		return "wasm" // not cached: a later call may read it
	}
	l = moduleLanguage(ctx, data)
	d.langs.mu.Lock()
	if d.langs.m == nil {
		d.langs.m = map[string]string{}
	}
	d.langs.m[version] = l
	d.langs.mu.Unlock()
	return l
}

// rememberLanguage records the language of a module stored under version,
// reading its manifest the way a submit checks it (the ardea.manifest
// section, else the ardea_manifest export, which compiles the module in a
// throwaway instance). It runs when a module is uploaded, so status and
// tracker calls only look it up.
func (d *Daemon) rememberLanguage(ctx context.Context, version string, data []byte) {
	l := ""
	if m, err := moduleread.Read(ctx, data, moduleread.Options{Timeout: 5 * time.Second}); err == nil && m != nil {
		l = m.SDK.Language
	} else {
		l = moduleLanguage(ctx, data)
	}
	d.langs.mu.Lock()
	if d.langs.m == nil {
		d.langs.m = map[string]string{}
	}
	d.langs.m[version] = l
	d.langs.mu.Unlock()
}

// moduleLanguage is the SDK language a module's ardea.manifest section
// names, else its producers section's. It never calls the module's
// ardea_manifest export: that compiles the module (about a second for a
// Go one), and status and tracker calls must stay cheap. (A module
// uploaded to this daemon has its language from rememberLanguage.)
func moduleLanguage(_ context.Context, data []byte) string {
	if b, ok, err := manifest.Section(data); err == nil && ok {
		if m, err := manifest.Decode(b); err == nil {
			return m.SDK.Language
		}
	}
	return producersLanguage(data)
}

// producersLanguage reads the "language" field of a WebAssembly module's
// producers custom section (the tool-conventions format: Go writes it;
// rustc and clang do unless the build strips custom sections) and maps it
// to Ardea's language names. "wasm" when absent or malformed.
func producersLanguage(b []byte) string {
	if len(b) < 8 || string(b[:4]) != "\x00asm" {
		return "wasm"
	}
	b = b[8:]
	for len(b) > 0 {
		id := b[0]
		n, k := uleb32(b[1:])
		if k == 0 || uint64(1+k)+uint64(n) > uint64(len(b)) {
			return "wasm"
		}
		body := b[1+k : 1+k+int(n)]
		b = b[1+k+int(n):]
		if id != 0 {
			continue
		}
		name, rest, ok := wasmName(body)
		if !ok || name != "producers" {
			continue
		}
		fields, k := uleb32(rest)
		if k == 0 {
			return "wasm"
		}
		rest = rest[k:]
		for range fields {
			var field string
			if field, rest, ok = wasmName(rest); !ok {
				return "wasm"
			}
			count, k := uleb32(rest)
			if k == 0 {
				return "wasm"
			}
			rest = rest[k:]
			for range count {
				var value string
				if value, rest, ok = wasmName(rest); !ok {
					return "wasm"
				}
				if _, rest, ok = wasmName(rest); !ok { // version
					return "wasm"
				}
				if field == "language" {
					return languageName(value)
				}
			}
		}
	}
	return "wasm"
}

func languageName(v string) string {
	switch l := strings.ToLower(v); {
	case l == "go":
		return "go"
	case l == "rust":
		return "rust"
	case strings.HasPrefix(l, "c++"):
		return "c++"
	case l == "c" || strings.HasPrefix(l, "c8") || strings.HasPrefix(l, "c9") || strings.HasPrefix(l, "c1"):
		return "c"
	case l == "assemblyscript":
		return "assemblyscript"
	default:
		return l
	}
}

func uleb32(b []byte) (uint32, int) {
	var v uint32
	for i := 0; i < len(b) && i < 5; i++ {
		v |= uint32(b[i]&0x7f) << (7 * i)
		if b[i] < 0x80 {
			return v, i + 1
		}
	}
	return 0, 0
}

func wasmName(b []byte) (string, []byte, bool) {
	n, k := uleb32(b)
	if k == 0 || uint64(k)+uint64(n) > uint64(len(b)) {
		return "", nil, false
	}
	return string(b[k : k+int(n)]), b[k+int(n):], true
}

// withLanguages fills the language of st's components: builtin, or the
// language their module's manifest (else producers section) names. It reads
// the topology's modules from the store, outside the topology's lock.
func (d *Daemon) withLanguages(ctx context.Context, sp *space, st Status) Status {
	if len(st.Components) == 0 {
		return st
	}
	rec, err := sp.store.GetTopology(ctx, st.Name)
	if err != nil {
		return st
	}
	for i := range st.Components {
		c := &st.Components[i]
		switch {
		case strings.HasPrefix(c.Module, ardea.BuiltinPrefix):
			c.Language = "builtin"
		case rec.Modules[c.Name] != "":
			c.Language = d.languageOf(ctx, sp, rec.Modules[c.Name])
		default:
			c.Language = "wasm"
		}
	}
	return st
}

// checkManifest checks a module about to replace component's against the
// topology (ardea.Topology.CheckManifest): its manifest's kind, outputs,
// fields read by name and config keys must fit. A module without a
// manifest is not checked.
func checkManifest(ctx context.Context, top *ardea.Topology, component string, module []byte) error {
	m, err := moduleread.Read(ctx, module, moduleread.Options{Timeout: 5 * time.Second})
	if err != nil {
		return fmt.Errorf("its manifest: %w", err)
	}
	if err := top.CheckManifest(component, m); err != nil {
		return fmt.Errorf("it does not fit the topology: %w", err)
	}
	return nil
}
