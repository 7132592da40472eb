// Package keyed holds the keyed-records example (topology.yaml: file spout
// -> parse -> seqstate -> file sink, with Go wasm bolts in go/) and the
// helpers the delivery-guarantee tests use with it: WriteInput makes an
// input of per-key sequence numbers, CheckAtLeastOnce and CheckExact read
// the sink's output.
//
// Run it with
//
//	go run ./cmd/ardea run examples/keyed/topology.yaml
package keyed
