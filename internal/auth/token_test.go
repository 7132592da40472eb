package auth

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestTokenRoundTrip(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		id, secret, tok, err := newToken()
		if err != nil {
			t.Fatal(err)
		}
		if seen[id] {
			t.Fatalf("id %s drawn twice", id)
		}
		seen[id] = true
		gotID, gotSecret, err := parseToken(tok)
		if err != nil || gotID != id || string(gotSecret) != string(secret) {
			t.Fatalf("parseToken(%q) = %q, %x, %v; want %q, %x", tok, gotID, gotSecret, err, id, secret)
		}
		if !hashEqual(hashSecret(id, secret), hashSecret(gotID, gotSecret)) {
			t.Fatal("hash differs for the same token")
		}
	}
}

func TestHashBindsID(t *testing.T) {
	secret := []byte(strings.Repeat("k", secretBytes))
	if hashEqual(hashSecret("000000000000", secret), hashSecret("000000000001", secret)) {
		t.Fatal("one secret under two ids hashes the same")
	}
	if len(hashSecret("000000000000", secret)) != 32 {
		t.Fatal("hash is not 256 bits")
	}
}

func TestParseExpiry(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, true}, {"0", 0, true}, {"30d", 30 * 24 * time.Hour, true}, {"720h", 720 * time.Hour, true},
		{"90m", 90 * time.Minute, true}, {" 1d ", 24 * time.Hour, true},
		{"-1h", 0, false}, {"-1d", 0, false}, {"d", 0, false}, {"1.5d", 0, false}, {"1w", 0, false},
		{"99999999999d", 0, false}, {"soon", 0, false},
	} {
		got, err := ParseExpiry(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseExpiry(%q) = %v, %v; want %v ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestBearerToken(t *testing.T) {
	for _, tc := range []struct {
		header, want string
		ok           bool
	}{
		{"Bearer ardea_x", "ardea_x", true},
		{"bearer ardea_x", "ardea_x", true},
		{"Bearer  ardea_x ", "ardea_x", true},
		{"Bearer", "", false},
		{"Bearer ", "", false},
		{"Basic dXNlcjpwdw==", "", false},
		{"ardea_x", "", false},
		{"", "", false},
	} {
		h := http.Header{}
		if tc.header != "" {
			h.Set("Authorization", tc.header)
		}
		got, ok := BearerToken(h)
		if got != tc.want || ok != tc.ok {
			t.Errorf("BearerToken(%q) = %q, %v; want %q, %v", tc.header, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzParseToken: parseToken never panics, and whatever it accepts is a
// token newToken could have minted: re-formatting it gives the input back.
func FuzzParseToken(f *testing.F) {
	_, _, tok, err := newToken()
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{tok, "", "ardea_", "ardea__", tok[:len(tok)-1], tok + "=", strings.ToUpper(tok),
		"ardea_0123456789ab_" + strings.Repeat("A", secretLen), "ardea_0123456789ab_" + strings.Repeat("_", secretLen)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, secret, err := parseToken(s)
		if err != nil {
			if id != "" || secret != nil {
				t.Fatalf("refused %q but returned %q, %x", s, id, secret)
			}
			return
		}
		if !validID(id) || len(secret) != secretBytes {
			t.Fatalf("accepted %q with id %q and %d secret bytes", s, id, len(secret))
		}
		if again := TokenPrefix + id + "_" + encodeSecret(secret); again != s {
			t.Fatalf("accepted %q, which formats back as %q", s, again)
		}
	})
}
