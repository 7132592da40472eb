package runtime

import (
	"testing"

	"github.com/ardea-dev/ardea/internal/names"
)

// TestIDParsesBack: an id names its tenant (none for the default one),
// topology and container, and parses back to them; Number reads the
// container of a topology's prefix only.
func TestIDParsesBack(t *testing.T) {
	for _, tc := range []struct {
		tenant, topology string
		c                int
		want             string
	}{
		{names.DefaultTenant, "wc", 3, "wc/container-3"},
		{"acme", "wc", 12, "acme.wc/container-12"},
	} {
		id := ID(tc.tenant, tc.topology, tc.c)
		if id != tc.want {
			t.Errorf("ID(%q, %q, %d) = %q, want %q", tc.tenant, tc.topology, tc.c, id, tc.want)
		}
		tenant, top, num, ok := Parse(id)
		if !ok || tenant != tc.tenant || top != tc.topology {
			t.Errorf("Parse(%q) = %q %q %q %v", id, tenant, top, num, ok)
		}
		if n, ok := Number(Prefix(tc.tenant, tc.topology), id); !ok || n != tc.c {
			t.Errorf("Number(%q) = %d %v, want %d", id, n, ok, tc.c)
		}
	}
	if _, ok := Number(Prefix("acme", "wc"), ID("globex", "wc", 1)); ok {
		t.Errorf("another tenant's container counted as acme's")
	}
	if _, _, _, ok := Parse("not-a-container"); ok {
		t.Errorf("Parse accepted an id without the container part")
	}
}
