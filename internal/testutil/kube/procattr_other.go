//go:build !linux

package kube

import "syscall"

// procAttr: elsewhere than Linux the harness does not start (Start skips),
// so only the build needs this to compile.
func procAttr() *syscall.SysProcAttr { return nil }
