package ardea_test

import (
	"fmt"

	"github.com/ardea-dev/ardea"
)

// Build a topology in code: a builtin spout, a WebAssembly bolt grouped by
// shuffle and a builtin sink grouped by field, then print it as the YAML
// `ardea run` reads. BuildWith validates it; a program that runs it passes
// the plugins' outputs and config checks (connectors.Outputs,
// connectors.ValidateConfig, or an environment's methods) and, here, skips
// the check that split.wasm exists.
func ExampleNewBuilder() {
	b := ardea.NewBuilder("wordcount")
	b.Spout("lines", "builtin:generator").Config("count", "100").Output("default", "line")
	b.Bolt("split", "split.wasm").Parallelism(2).Shuffle("lines").Output("default", "word")
	b.Bolt("out", "builtin:file").Fields("split", "word").Config("path", "counts.txt").NoOutputs()
	top, err := b.BuildWith(ardea.ValidateOptions{SkipModuleCheck: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	spec, err := top.Format()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(string(spec))
	// Output:
	// name: wordcount
	// spouts:
	//   - name: lines
	//     module: builtin:generator
	//     parallelism: 1
	//     config:
	//       count: 100
	//     outputs:
	//       default: [line]
	// bolts:
	//   - name: split
	//     module: split.wasm
	//     parallelism: 2
	//     outputs:
	//       default: [word]
	//     inputs:
	//       - {from: lines, stream: default, grouping: shuffle}
	//   - name: out
	//     module: builtin:file
	//     parallelism: 1
	//     config:
	//       path: counts.txt
	//     outputs: {}
	//     inputs:
	//       - {from: split, stream: default, grouping: fields, fields: [word]}
}
