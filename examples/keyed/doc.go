// Package keyed holds the keyed-records example (topology.yaml: file spout
// -> parse -> seqstate -> file sink, with Go wasm bolts in go/) and the
// helpers the delivery-guarantee tests use with it: WriteInput makes an
// input of per-key sequence numbers, CheckAtLeastOnce and CheckExact read
// the sink's output.
//
// Run it with
//
//	go run ./cmd/ardea run examples/keyed/topology.yaml
//
// input.txt holds 100 keys x 100 sequence numbers (WriteInput(path, 100,
// 100)); the run writes records.tsv, which keyed.CheckExact accepts.
package keyed
