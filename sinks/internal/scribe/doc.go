// Package scribe is the Thrift code for Scribe's Log call (client,
// processor and types), generated from scribe.thrift by Debian's thrift
// compiler 0.17 for github.com/apache/thrift v0.17.0. Only tests import
// it: the Scribe sink and sinks.ServeScribe write the wire format
// themselves (sinks/scribewire.go), and the tests check both ends against
// this code. Do not edit the generated files; see README.md.
package scribe

//go:generate thrift --gen go:package_prefix=github.com/ardea-dev/ardea/sinks/internal/,skip_remote -out .. scribe.thrift
//go:generate gofmt -w GoUnusedProtection__.go scribe-consts.go scribe.go
