package build

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/tetratelabs/wazero"

	assdk "github.com/ardea-dev/ardea/wasm-sdk/assemblyscript"
)

// buildAssemblyScript compiles assembly/index.ts of an AssemblyScript
// component with asc and the SDK's flags (assdk.Flags, the package's
// asc-flags.json, which its test harness compiles with too):
//
//	asc assembly/index.ts -O3 --debug --runtime incremental --exportStart _initialize \
//	  --use abort=~lib/ardea-sdk/assembly/abort/ardeaAbort (and trace, seed) \
//	  --path <the SDK embedded in ardea> -o OUT
//
// --debug keeps the name section (traps name the user's functions) and
// changes no other byte of the -O3 module.
//
// asc comes from node_modules/.bin of dir or a parent folder, else from
// PATH. "ardea-sdk" resolves to the project's own node_modules/ardea-sdk
// if it has one, else to the SDK embedded in this binary. The project's
// asconfig.json is not read: the flags above are what the host needs.
func buildAssemblyScript(ctx context.Context, dir, absOut string) error {
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("build %s: %w", dir, err)
	}
	entry := filepath.Join("assembly", "index.ts")
	if _, err := os.Stat(filepath.Join(absDir, entry)); err != nil {
		return fmt.Errorf("AssemblyScript component %s: the entry file must be assembly/index.ts: %w", dir, err)
	}
	install := fmt.Sprintf("npm install --save-dev assemblyscript@%s", assdk.ASCVersion)
	if _, err := exec.LookPath("node"); err != nil {
		return fmt.Errorf("building AssemblyScript component %s needs Node.js and the AssemblyScript compiler: "+
			"install Debian's nodejs and npm (apt-get install nodejs npm), then run `%s` in %s: %w", dir, install, dir, err)
	}
	asc, err := findASC(absDir)
	if err != nil {
		return fmt.Errorf("building AssemblyScript component %s needs the AssemblyScript compiler asc, "+
			"which is neither in node_modules/.bin of %s or a parent folder nor on PATH: run `%s` in %s: %w",
			dir, dir, install, dir, err)
	}

	tmp, err := os.MkdirTemp("", "ardea-asc-")
	if err != nil {
		return fmt.Errorf("build %s: %w", dir, err)
	}
	defer os.RemoveAll(tmp)
	lib := filepath.Join(tmp, "lib")
	if err := writeSDK(filepath.Join(lib, assdk.PackageName)); err != nil {
		return fmt.Errorf("build %s: %w", dir, err)
	}
	// An empty config keeps asc from merging the project's asconfig.json
	// (its outFile, textFile, runtime, ...) into the flags.
	config := filepath.Join(tmp, "asconfig.json")
	if err := os.WriteFile(config, []byte("{}\n"), 0o644); err != nil {
		return fmt.Errorf("build %s: %w", dir, err)
	}
	out := filepath.Join(tmp, "out.wasm")
	args := append([]string{entry}, assdk.Flags...)
	args = append(args, "--config", config, "--path", lib, "--noColors", "-o", out)
	cmd := exec.CommandContext(ctx, asc, args...)
	cmd.Dir = absDir
	var output bytes.Buffer
	cmd.Stdout = &output
	cmd.Stderr = &output
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(output.String())
		var ee *exec.ExitError
		if errors.As(err, &ee) && msg != "" {
			return fmt.Errorf("asc build of component %s failed:\n%s", dir, msg)
		}
		return fmt.Errorf("asc build of component %s: %w", dir, err)
	}
	wasm, err := os.ReadFile(out)
	if err != nil {
		return fmt.Errorf("asc build of component %s: %w", dir, err)
	}
	if err := checkASModule(ctx, dir, wasm); err != nil {
		return err
	}
	if err := os.WriteFile(absOut, wasm, 0o644); err != nil {
		return fmt.Errorf("build %s: %w", dir, err)
	}
	return nil
}

// findASC looks for asc in node_modules/.bin of dir and its parents, then
// on PATH.
func findASC(dir string) (string, error) {
	for d := dir; ; {
		p := filepath.Join(d, "node_modules", ".bin", "asc")
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	return exec.LookPath("asc")
}

// writeSDK copies the embedded SDK package to dir.
func writeSDK(dir string) error {
	return fs.WalkDir(assdk.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.FromSlash(p))
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := assdk.FS.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}

// checkASModule explains the mistakes an AssemblyScript module can make
// that the host would refuse: imports from "env" (JavaScript host APIs)
// and a missing re-export of the SDK's ABI exports.
func checkASModule(ctx context.Context, dir string, wasm []byte) error {
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer r.Close(ctx)
	cm, err := r.CompileModule(ctx, wasm)
	if err != nil {
		return fmt.Errorf("asc build of component %s: the module does not compile: %w", dir, err)
	}
	for _, f := range cm.ImportedFunctions() {
		mod, name, _ := f.Import()
		if mod == "ardea" || mod == "wasi_snapshot_preview1" {
			continue
		}
		return fmt.Errorf("AssemblyScript component %s imports %s.%s, which the Ardea host does not provide "+
			"(only the ardea and wasi_snapshot_preview1 modules): JavaScript host APIs such as Date.now, "+
			"console.log or process are not available; use Context.now(), Context.logger and Context.config instead", dir, mod, name)
	}
	if _, ok := cm.ExportedFunctions()["ardea_abi_version"]; !ok {
		return fmt.Errorf("AssemblyScript component %s does not export the Ardea ABI: "+
			"add `export * from \"ardea-sdk/exports\";` to assembly/index.ts", dir)
	}
	return nil
}
