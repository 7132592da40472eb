package connectors

import "slices"

// Corpus returns a copy of the generator spout's sentences (benchmarks use it
// for their plain-Go baselines).
func Corpus() []string { return slices.Clone(corpus) }
