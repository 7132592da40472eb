package suggest

import "testing"

func TestClosest(t *testing.T) {
	names := []string{"interval", "queue_batches", "prometheus", "graphite"}
	for _, tc := range []struct{ in, want string }{
		{"intervall", "interval"},
		{"promethues", "prometheus"}, // a transposition is one edit
		{"grafite", "graphite"},
		{"scribe", ""}, // nothing close
		{"i", ""},      // too short to guess
		{"interval", "interval"},
	} {
		if got := Closest(tc.in, names); got != tc.want {
			t.Errorf("Closest(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"", "abc", 3}, {"abc", "abc", 0}, {"abc", "acb", 1}, {"kitten", "sitting", 3}} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
