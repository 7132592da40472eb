package natsauth

import (
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/nats-io/nkeys"

	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/internal/auth"
)

// MinSecretBytes is the shortest cluster secret accepted.
const MinSecretBytes = 32

// Secret is a cluster's shared secret: every node of one Ardea cluster
// is started with the same (`ardea server --cluster-secret-file`). The
// keys all nodes must agree on are derived from it (HKDF-SHA256, one
// label each): the operator's, the system account's and the "ardea"
// account's keys, the password the NATS routes between the nodes
// present, and the key of the CA their TLS trusts (RouteCA). A tenant's account key is random and kept in the cluster's
// replicated accounts bucket (Manager.Share), so a secret alone does
// not give a tenant's data away, and a tenant made again gets a new key.
//
// The secret is text, any printable characters (a Kubernetes Secret made
// by a Helm chart's randAlphaNum is fine), at least MinSecretBytes long;
// surrounding white space is not part of it.
type Secret struct{ b []byte }

// NewSecret makes a random secret (what `ardea server secret` prints).
func NewSecret() Secret {
	b := make([]byte, 48)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return Secret{b: []byte(base64.RawURLEncoding.EncodeToString(b))}
}

// ParseSecret checks a secret's text.
func ParseSecret(text []byte) (Secret, error) {
	s := strings.TrimSpace(string(text))
	if len(s) < MinSecretBytes {
		return Secret{}, fmt.Errorf("cluster secret: %d bytes, want at least %d", len(s), MinSecretBytes)
	}
	for _, r := range s {
		if r < 0x21 || r > 0x7e {
			return Secret{}, errors.New("cluster secret: only printable ASCII without spaces")
		}
	}
	return Secret{b: []byte(s)}, nil
}

// ReadSecret reads a secret from a file that only its owner may read
// (mode 0600 or narrower): a secret others can read is refused, naming
// the file.
func ReadSecret(path string) (Secret, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Secret{}, fmt.Errorf("cluster secret: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return Secret{}, fmt.Errorf("cluster secret %s: mode %v lets others read it; chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return Secret{}, fmt.Errorf("cluster secret: %w", err)
	}
	s, err := ParseSecret(b)
	if err != nil {
		return Secret{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// WriteFile writes the secret to path with mode 0600.
func (s Secret) WriteFile(path string) error {
	return auth.WriteSecretFile(path, append(append([]byte(nil), s.b...), '\n'))
}

// String is the secret's text (what WriteFile writes).
func (s Secret) String() string { return string(s.b) }

// IsZero reports a secret that was never set.
func (s Secret) IsZero() bool { return len(s.b) == 0 }

// derive is 32 bytes for label.
func (s Secret) derive(label string) []byte {
	k, err := hkdf.Key(sha256.New, s.b, []byte("ardea cluster"), label, 32)
	if err != nil { // only for lengths sha256 cannot give
		panic(err)
	}
	return k
}

// RoutePassword is what the NATS routes between the nodes present
// (bus.Cluster.Password).
func (s Secret) RoutePassword() string { return hex.EncodeToString(s.derive("nats routes")) }

// RouteCA is the cluster's route certificate authority (bus.RouteCA),
// its Ed25519 key derived from the secret: every node builds the same
// CA, issues itself leaf certificates from it, and trusts only it on the
// routes, so a node without the secret can neither join nor read the
// routes. Another secret is another CA.
func (s Secret) RouteCA() (*bus.RouteCA, error) {
	return bus.NewRouteCA(ed25519.NewKeyFromSeed(s.derive("route tls ca")))
}

// RouteTLS is node's bus.RouteTLS from RouteCA.
func (s Secret) RouteTLS(node string) (*bus.RouteTLS, error) {
	ca, err := s.RouteCA()
	if err != nil {
		return nil, err
	}
	return ca.TLS(node), nil
}

// keys derives the operator's, the system account's and the "ardea"
// account's key pairs.
func (s Secret) keys() (op, sys, admin nkeys.KeyPair, err error) {
	if op, err = nkeys.FromRawSeed(nkeys.PrefixByteOperator, s.derive("operator")); err != nil {
		return
	}
	if sys, err = nkeys.FromRawSeed(nkeys.PrefixByteAccount, s.derive("system account")); err != nil {
		return
	}
	admin, err = nkeys.FromRawSeed(nkeys.PrefixByteAccount, s.derive("ardea account"))
	return
}
