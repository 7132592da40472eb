// Package names holds the one rule for the names Ardea puts into NATS
// subjects, KV keys and object names: topologies, components, streams,
// tenants.
package names

// MaxLen is the longest name accepted.
const MaxLen = 128

// Valid reports whether s is 1..MaxLen letters, digits, '_' or '-'.
func Valid(s string) bool {
	if s == "" || len(s) > MaxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b == '-') {
			return false
		}
	}
	return true
}
