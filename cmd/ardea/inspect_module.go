package main

// ardea inspect MODULE: what a module says about itself (its manifest).

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ardea-dev/ardea/internal/build"
	"github.com/ardea-dev/ardea/internal/manifest"
	"github.com/ardea-dev/ardea/internal/manifest/moduleread"
)

// moduleInfo is what ardea inspect prints (-o json|yaml: this document;
// "manifest" is the module's manifest as wasm-sdk/ABI.md defines it, null
// when it has none).
type moduleInfo struct {
	Module string `json:"module"`
	Bytes  int    `json:"bytes"`
	// Source says where the manifest was read: "section" (the
	// ardea.manifest custom section ardea build stores), "export" (the
	// ardea_manifest export, called here) or "none".
	Source   string             `json:"source"`
	Manifest *manifest.Manifest `json:"manifest"`
}

func newInspectCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "inspect MODULE",
		Short: "Print a module's manifest: its SDK, kind, output streams and fields, inputs read by name, config keys",
		Long: `Print what a module built with an Ardea SDK declares about itself (its
manifest, wasm-sdk/ABI.md): the SDK's language and version, spout or bolt,
the streams it emits with their fields, the input fields it reads by name
and the config keys it reads. ardea run and ardea submit check a topology
against it; a topology may leave out outputs: for a module that declares
them.

The manifest is read from the module's ardea.manifest custom section (ardea
build stores it), else by calling its ardea_manifest export in a sandbox (no
host functions, bounded memory, a deadline). A module with neither has no
manifest: it runs unchecked. MODULE may also be a component source folder,
which is built first.`,
		Example: `  ardea inspect examples/wordcount/go/split.wasm
  ardea inspect my-bolt.wasm -o json | jq .manifest.outputs
  ardea inspect examples/wordcount/rust/count`,
		RunE: func(cmd *cobra.Command, args []string) error {
			path := args[0]
			st, err := os.Stat(path)
			if err != nil {
				return fmt.Errorf("%s: no such module: expected a .wasm file or a component source folder", path)
			}
			if st.IsDir() {
				tmp, err := os.MkdirTemp("", "ardea-inspect-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(tmp)
				out := filepath.Join(tmp, filepath.Base(filepath.Clean(path))+".wasm")
				if _, err := build.Build(cmd.Context(), path, out); err != nil {
					return err
				}
				path = out
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			info := moduleInfo{Module: args[0], Bytes: len(data), Source: "none"}
			_, inSection, err := manifest.Section(data)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			if info.Manifest, err = moduleread.Read(cmd.Context(), data, moduleread.Options{MaxCompileBytes: -1}); err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			switch {
			case info.Manifest != nil && inSection:
				info.Source = "section"
			case info.Manifest != nil:
				info.Source = "export"
			}
			return outputOf(cmd).Print(cmd.OutOrStdout(), info, func(w io.Writer) error { return printModuleInfo(w, info) })
		},
	}
	positional(cmd, posArg{name: "MODULE", what: "a .wasm module (or a component source folder)", exts: []string{"wasm"}})
	addOutput(cmd)
	return cmd
}

func printModuleInfo(w io.Writer, info moduleInfo) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "module:\t%s (%d bytes)\n", info.Module, info.Bytes)
	m := info.Manifest
	if m == nil {
		fmt.Fprintf(tw, "manifest:\tnone (the module was built with an SDK that declares none: it runs unchecked, and a topology must give its outputs)\n")
		return tw.Flush()
	}
	switch info.Source {
	case "section":
		fmt.Fprintf(tw, "manifest:\tstored in the %s section\n", manifest.SectionName)
	case "export":
		fmt.Fprintf(tw, "manifest:\tfrom the %s export (not stored: ardea build stores it)\n", manifest.ExportName)
	}
	fmt.Fprintf(tw, "sdk:\t%s %s\n", m.SDK.Language, m.SDK.Version)
	fmt.Fprintf(tw, "kind:\t%s\n", m.Kind)
	switch {
	case m.Outputs == nil:
		fmt.Fprintf(tw, "outputs:\tnot declared (the topology's outputs: are used unchecked)\n")
	case len(m.Outputs) == 0:
		fmt.Fprintf(tw, "outputs:\tnone (emits nothing)\n")
	default:
		for i, o := range m.Outputs {
			label := "outputs:"
			if i > 0 {
				label = ""
			}
			fmt.Fprintf(tw, "%s\t%s: [%s]\n", label, o.Stream, strings.Join(o.Fields, ", "))
		}
	}
	if m.Kind == "bolt" {
		fmt.Fprintf(tw, "inputs:\t%s\n", declared(m.Inputs, "reads no field by name", " (read by name)"))
	}
	fmt.Fprintf(tw, "config:\t%s\n", declared(m.Config, "reads no config key", ""))
	return tw.Flush()
}

func declared(list []string, none, suffix string) string {
	switch {
	case list == nil:
		return "not declared"
	case len(list) == 0:
		return none
	}
	return "[" + strings.Join(list, ", ") + "]" + suffix
}
