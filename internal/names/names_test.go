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

func TestSubject(t *testing.T) {
	for _, tc := range []struct {
		tenant, topology string
		tokens           []string
		want             string
	}{
		{"acme", "wc", []string{"ctl", "hb"}, "ardea.acme.wc.ctl.hb"},
		{"", "wc", []string{"data", "2"}, "ardea.default.wc.data.2"},
		{"acme", "wc", nil, "ardea.acme.wc"},
	} {
		if got := Subject(tc.tenant, tc.topology, tc.tokens...); got != tc.want {
			t.Errorf("Subject(%q, %q, %q) = %q, want %q", tc.tenant, tc.topology, tc.tokens, got, tc.want)
		}
	}
}
