package main

import (
	"testing"

	"github.com/ardea-dev/ardea/internal/testutil"
)

// TestKafkaWordCount runs the example end to end against kfake in each
// reliability mode: topic counts ends up with every word's final count.
// The fast tier runs the committed builds of the Go split and count; the
// full run builds their folders, as the example does.
func TestKafkaWordCount(t *testing.T) {
	var prebuilt []string
	if testing.Short() {
		prebuilt = testutil.GoWordCountModules()
	}
	for _, mode := range []string{"at_most_once", "at_least_once", "effectively_once"} {
		t.Run(mode, func(t *testing.T) {
			if err := run("", mode, false, prebuilt...); err != nil {
				t.Fatal(err)
			}
		})
	}
}
