package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ardea-dev/ardea/internal/scaffold"
)

var langNames = []string{"go", "rust", "c", "assemblyscript"}

func newNewCmd() *cobra.Command {
	var lang, dir string
	cmd := &cobra.Command{
		Use:   "new spout|bolt NAME",
		Short: "Create a component project anywhere: source, build file, unit test, topology",
		Long: `Create a spout or bolt project in its own folder (default ./NAME), outside
this repository if you like. It holds:
  - a small working component (a bolt upper-cases the field "line"; a
    spout emits "line 1" .. "line N", or never ends with count 0),
    declaring its streams and fields;
  - its build file (go.mod, Cargo.toml, package.json or a Makefile), which
    points at the SDK copy written into ardea-sdk/, so nothing is fetched;
  - a unit test written with the SDK's test harness;
  - topology.yaml running it between the file spout and the file sink,
    with a sample input;
  - a README with the commands to test, build and run it, then to submit
    it so that it runs until killed, swap a new build in and kill it.`,
		Example: `  ardea new bolt upper --lang go
  ardea new bolt enrich --lang rust --dir ~/src/enrich
  ardea new spout ticks --lang assemblyscript`,
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, err := scaffold.ParseKind(args[0])
			if err != nil {
				return usageError{err}
			}
			l, err := scaffold.ParseLanguage(lang)
			if err != nil {
				return usageError{fmt.Errorf("--lang: %w", err)}
			}
			p, err := scaffold.New(scaffold.Options{Kind: kind, Name: args[1], Lang: l, Dir: dir})
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "created %s %s %q in %s (%d files; SDK %s %s in %s/)\n",
				l, kind, p.Data.Name, scaffold.Abs(p.Dir), len(p.Files), l, p.Data.SDKVersion, scaffold.SDKDir)
			c := scaffold.CommandsFor(l, kind, p.Data.Name)
			fmt.Fprintf(w, "\n  cd %s\n  %s    # unit test\n  %s    # build\n  %s    # run; output in output.txt\n", p.Dir, c.Test, c.Build, c.Run)
			fmt.Fprintf(w, "\nlive, under the daemon (ardea local, in another terminal):\n  %s    # runs until killed\n  %s    # a new build into the running topology\n  %s\n", c.Submit, c.Swap, c.Kill)
			return nil
		},
	}
	positional(cmd,
		posArg{name: "spout|bolt", what: "the kind of component", complete: func(*cobra.Command, []string) []string { return []string{"spout", "bolt"} }},
		posArg{name: "NAME", what: "the component's name (lower case: letters, digits, - and _)"})
	cmd.Flags().StringVar(&lang, "lang", "go", "language: go, rust, c or assemblyscript")
	cmd.Flags().StringVar(&dir, "dir", "", "project folder to create (default ./NAME)")
	_ = cmd.RegisterFlagCompletionFunc("lang", cobra.FixedCompletions(langNames, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// sdkInfo is one row of `ardea sdk list`.
type sdkInfo struct {
	Language string `json:"language" yaml:"language"`
	Version  string `json:"version" yaml:"version"`
	Files    int    `json:"files" yaml:"files"`
}

func newSDKCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sdk",
		Short: "The guest SDKs this binary carries: list them, write one out",
		Long: `The ardea binary carries the Go, Rust, C and AssemblyScript SDKs at the
versions it was built with, so a component builds with no registry access.`,
		Example: `  ardea sdk list
  ardea sdk export --lang rust ./vendor/ardea`,
	}
	cmd.AddCommand(newSDKListCmd(), newSDKExportCmd())
	return cmd
}

func newSDKListCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List the SDKs and their versions",
		Example: "  ardea sdk list\n  ardea sdk list -o json",
		RunE: func(cmd *cobra.Command, _ []string) error {
			sdks, err := scaffold.SDKs()
			if err != nil {
				return err
			}
			rows := make([]sdkInfo, 0, len(sdks))
			for _, s := range sdks {
				files, err := s.Files()
				if err != nil {
					return err
				}
				rows = append(rows, sdkInfo{Language: string(s.Lang), Version: s.Version, Files: len(files)})
			}
			return outputOf(cmd).Print(cmd.OutOrStdout(), rows, func(w io.Writer) error {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "LANGUAGE\tVERSION\tFILES")
				for _, r := range rows {
					fmt.Fprintf(tw, "%s\t%s\t%d\n", r.Language, r.Version, r.Files)
				}
				return tw.Flush()
			})
		},
	}
	positional(cmd)
	addOutput(cmd)
	return cmd
}

func newSDKExportCmd() *cobra.Command {
	var lang string
	var force bool
	cmd := &cobra.Command{
		Use:   "export --lang L DIR",
		Short: "Write an SDK into DIR (a Go module, a Rust crate, an npm package, or C sources)",
		Long: `Write the SDK of one language, as this binary carries it, into DIR:
  go              a Go module (github.com/ardea-dev/ardea/wasm-sdk/go) with its
                  test harness; point go.mod at it with a replace directive
  rust            the ardea crate; depend on it with ardea = { path = "DIR" }
  c               include/ardea.h, src/ardea.c and the native test harness
  assemblyscript  the ardea-sdk npm package; depend on it with "file:DIR"
Existing files are not written over unless --force.`,
		Example: `  ardea sdk export --lang go ./ardea-sdk
  ardea sdk export --lang rust vendor/ardea`,
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := scaffold.ParseLanguage(lang)
			if err != nil {
				return usageError{fmt.Errorf("--lang: %w", err)}
			}
			files, err := scaffold.Export(l, args[0], force)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote the %s SDK to %s (%d files)\n", l, scaffold.Abs(args[0]), len(files))
			return nil
		},
	}
	positional(cmd, posArg{name: "DIR", what: "the folder to write the SDK into"})
	cmd.Flags().StringVar(&lang, "lang", "", "language: go, rust, c or assemblyscript (required)")
	cmd.Flags().BoolVar(&force, "force", false, "write over existing files")
	_ = cmd.MarkFlagRequired("lang")
	_ = cmd.RegisterFlagCompletionFunc("lang", cobra.FixedCompletions(langNames, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}
