package main

import "testing"

// TestKafkaWordCount runs the example end to end against kfake in each
// reliability mode: topic counts ends up with every word's final count.
func TestKafkaWordCount(t *testing.T) {
	for _, mode := range []string{"at_most_once", "at_least_once", "effectively_once"} {
		t.Run(mode, func(t *testing.T) {
			if err := run("", mode, false); err != nil {
				t.Fatal(err)
			}
		})
	}
}
