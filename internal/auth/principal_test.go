package auth

import (
	"context"
	"testing"
)

func TestScopeAllows(t *testing.T) {
	// Rows: the token's scope; columns: what is needed, in Scopes' order
	// (read, operate, deploy, admin, metrics).
	want := map[Scope][5]bool{
		ScopeRead:    {true, false, false, false, false},
		ScopeOperate: {true, true, false, false, false},
		ScopeDeploy:  {true, true, true, false, false},
		ScopeAdmin:   {true, true, true, true, true},
		ScopeMetrics: {false, false, false, false, true},
		"":           {false, false, false, false, false},
		"root":       {false, false, false, false, false},
	}
	for have, row := range want {
		for i, need := range Scopes {
			if got := have.Allows(need); got != row[i] {
				t.Errorf("%q.Allows(%q) = %v, want %v", have, need, got, row[i])
			}
		}
	}
}

func TestParseScope(t *testing.T) {
	for _, s := range Scopes {
		if got, err := ParseScope(string(s)); err != nil || got != s {
			t.Errorf("ParseScope(%q) = %q, %v", s, got, err)
		}
	}
	for _, bad := range []string{"", "Read", "ADMIN", "write", "admin "} {
		if _, err := ParseScope(bad); err == nil {
			t.Errorf("ParseScope(%q) accepted", bad)
		}
	}
}

func TestPrincipalContext(t *testing.T) {
	if _, ok := PrincipalFrom(context.Background()); ok {
		t.Fatal("a bare context carries a principal")
	}
	p := Principal{Tenant: "acme", TokenID: "0123456789ab", Name: "ci", Scope: ScopeDeploy}
	got, ok := PrincipalFrom(WithPrincipal(context.Background(), p))
	if !ok || got != p {
		t.Fatalf("PrincipalFrom = %+v, %v", got, ok)
	}
	if p.String() != "acme/ci (token 0123456789ab)" {
		t.Errorf("String = %q", p.String())
	}
}
