package names

import (
	"strings"
	"testing"
)

func TestValid(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{"wc", true}, {"word-count_2", true}, {"A", true},
		{"", false}, {"a.b", false}, {"a b", false}, {"a*", false}, {"a>", false}, {"naïve", false},
		{strings.Repeat("x", MaxLen), true}, {strings.Repeat("x", MaxLen+1), false},
	} {
		if got := Valid(tc.s); got != tc.want {
			t.Errorf("Valid(%q) = %v, want %v", tc.s, got, tc.want)
		}
	}
}
