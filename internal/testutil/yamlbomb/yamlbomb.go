// Package yamlbomb builds the YAML bombs the parser's budget is tested
// with (a package of its own: the root package's tests cannot import
// testutil, whose -update flag they define too).
package yamlbomb

import (
	"fmt"
	"strings"
)

// MergeKey is issue 30's YAML merge-key bomb: level N merges level
// N-1 ten times, and a component's config merges the deepest level, so a
// spec of a few hundred bytes expands to 10^depth entries (751 bytes and
// 29.6 s of parse at depth 8 before the parser had a budget).
func MergeKey(depth int) string {
	var b strings.Builder
	b.WriteString("name: bomb\nx-a0: &a0 {k: v}\n")
	for i := 1; i <= depth; i++ {
		refs := strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 10), ", ")
		fmt.Fprintf(&b, "x-a%d: &a%d {<<: [%s]}\n", i, i, refs)
	}
	fmt.Fprintf(&b, "spouts:\n  - name: s\n    module: builtin:generator\n    config: {<<: *a%d}\n", depth)
	return b.String()
}
