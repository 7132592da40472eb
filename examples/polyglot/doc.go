// Package polyglot is the polyglot word-count example (topology.yaml):
// split in Rust, upper in AssemblyScript, count in C. Its test runs it and
// compares the counts with the Go word count's. The package has no code.
package polyglot
