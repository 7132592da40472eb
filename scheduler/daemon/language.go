package daemon

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/internal/manifest"
	"github.com/ardea-dev/ardea/internal/manifest/moduleread"
	"github.com/ardea-dev/ardea/internal/wasmbin"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/internal/tenancy"
)

// moduleLanguages caches the source language of uploaded modules by
// version (sha256): a module's bytes never change under its version.
type moduleLanguages struct {
	mu sync.Mutex
	m  map[string]string
}

// languageOf returns version's language from its producers section, or
// "wasm" when the module does not say (or cannot be read).
func (d *Daemon) languageOf(ctx context.Context, sp *tenancy.Space, version string) string {
	d.langs.mu.Lock()
	l, ok := d.langs.m[version]
	d.langs.mu.Unlock()
	if ok {
		return l
	}
	if sp == nil {
		return "wasm"
	}
	data, err := sp.Store().GetArtifact(ctx, version)
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
	o := moduleread.Options{Timeout: 5 * time.Second}
	// The compiled code is kept where `ardea run` keeps it when it checks
	// manifests (modules.Builder.Manifests: the cache dir's manifest
	// folder), and with the same settings: a module compiled there or at
	// an earlier upload (a Go one takes seconds) is not compiled again.
	if dir := d.cacheDir(); dir != "" { // "": a Daemon of a unit test, not started
		if c, err := wazero.NewCompilationCacheWithDir(filepath.Join(dir, "manifest")); err == nil {
			defer c.Close(context.WithoutCancel(ctx))
			o.Cache = c
		}
	}
	if m, err := moduleread.Read(ctx, data, o); err == nil && m != nil {
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
	if errors.Is(wasmbin.CheckHeader(b), wasmbin.ErrNotModule) {
		return "wasm" // any version is read: the language is only shown
	}
	for s, err := range wasmbin.Sections(b) {
		if err != nil {
			return "wasm"
		}
		if name, rest, ok := s.CustomName(b); ok && string(name) == "producers" {
			v, found, err := producersField(rest, "language")
			if err != nil {
				return "wasm"
			}
			if found {
				return languageName(string(v))
			}
		}
	}
	return "wasm"
}

// producersField returns the first value of field in the content of a
// producers section (after its name): vec(field name, vec(value, version)).
// found is false when no field of that name has a value.
func producersField(c []byte, field string) (value []byte, found bool, err error) {
	fields, p, err := wasmbin.ReadU32(c, 0)
	for ; err == nil && fields > 0; fields-- {
		var name []byte
		var count uint32
		if name, p, err = wasmbin.ReadName(c, p); err != nil {
			break
		}
		if count, p, err = wasmbin.ReadU32(c, p); err != nil {
			break
		}
		for ; err == nil && count > 0; count-- {
			var v []byte
			if v, p, err = wasmbin.ReadName(c, p); err != nil {
				break
			}
			if _, p, err = wasmbin.ReadName(c, p); err != nil { // version
				break
			}
			if string(name) == field {
				return v, true, nil
			}
		}
	}
	return nil, false, err
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

// withLanguages fills the language of st's components: builtin, or the
// language their module's manifest (else producers section) names. It reads
// the topology's modules from the store, outside the topology's lock.
func (d *Daemon) withLanguages(ctx context.Context, sp *tenancy.Space, st api.Status) api.Status {
	if len(st.Components) == 0 {
		return st
	}
	rec, err := sp.Store().GetTopology(ctx, st.Name)
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
