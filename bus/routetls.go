package bus

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"sync"
	"time"
)

// RouteTLS is the TLS of the routes between a cluster's nodes
// (Cluster.TLS). Every route is TLS 1.3 with both ends verified: the
// node that accepts a route presents its certificate and asks the
// dialing node for one, and each checks the other's against CAs. A peer
// without a certificate of CAs is refused before it sends a byte of
// NATS protocol, and so is a peer that speaks plaintext.
type RouteTLS struct {
	// Certificate returns this node's certificate and key. It is called
	// at every route handshake, the node's as a server and as a client,
	// so a certificate renewed meanwhile is the one presented. The
	// certificate must allow both server and client authentication.
	Certificate func() (*tls.Certificate, error)
	// CAs verify the peers' certificates.
	CAs *x509.CertPool
	// ServerName is the name a peer's certificate must carry when this
	// node dials it; empty: the host of the route's URL (nats-server's
	// own rule, see LoadRouteTLS).
	ServerName string
}

// routeTLSTimeout bounds a route's TLS handshake (nats-server's default
// is 2 s; a loaded node can take longer).
const routeTLSTimeout = 5 * time.Second

// config is the tls.Config nats-server uses on both ends of a route.
func (r *RouteTLS) config() *tls.Config {
	get := r.Certificate
	return &tls.Config{
		MinVersion:           tls.VersionTLS13,
		GetCertificate:       func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return get() },
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return get() },
		RootCAs:              r.CAs,
		ClientCAs:            r.CAs,
		ClientAuth:           tls.RequireAndVerifyClientCert,
		ServerName:           r.ServerName,
	}
}

// RouteServerName is the name every certificate a RouteCA issues
// carries, and the one its RouteTLS verifies: route URLs are whatever
// the operator lists (IP addresses, service names, ports), so the
// certificates do not name hosts; holding a certificate of the CA is
// what makes a node a member.
const RouteServerName = "ardea-cluster"

// RouteCA is a cluster's route certificate authority built from a
// private key every node of the cluster has (internal/natsauth derives
// it from the cluster's secret): every field of its certificate is
// fixed and Ed25519 signatures are deterministic, so every node builds
// the very same CA certificate and nothing needs to be distributed.
// Each node issues itself short-lived leaf certificates from it
// (RouteCA.TLS); the leaves' keys live in memory only.
type RouteCA struct {
	key  ed25519.PrivateKey
	cert *x509.Certificate
}

// The route CA's fixed fields and the leaves' life.
var (
	routeCANotBefore = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	// routeCANotAfter is RFC 5280's "no well-defined expiration date".
	routeCANotAfter = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
)

const (
	// routeLeafLife is a leaf certificate's validity; routeLeafRenew
	// the time left below which the next handshake issues a new one;
	// routeLeafBackdate its NotBefore's margin for clocks that differ.
	routeLeafLife     = 24 * time.Hour
	routeLeafRenew    = 12 * time.Hour
	routeLeafBackdate = time.Hour
)

// NewRouteCA builds the route CA of key (the same key gives the same
// certificate, byte for byte).
func NewRouteCA(key ed25519.PrivateKey) (*RouteCA, error) {
	if len(key) != ed25519.PrivateKeySize {
		return nil, errors.New("bus: route CA: not an Ed25519 private key")
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{Organization: []string{"Ardea"}, CommonName: "Ardea cluster route CA"},
		NotBefore:             routeCANotBefore,
		NotAfter:              routeCANotAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	pub := key.Public()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, key)
	if err != nil {
		return nil, fmt.Errorf("bus: route CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("bus: route CA: %w", err)
	}
	return &RouteCA{key: key, cert: cert}, nil
}

// Certificate is the CA's certificate (public).
func (ca *RouteCA) Certificate() *x509.Certificate { return ca.cert }

// String names the CA by its certificate's SHA-256 (never the key).
func (ca *RouteCA) String() string {
	return fmt.Sprintf("bus.RouteCA{%s}", fingerprint(ca.cert.Raw))
}

// Issue makes a leaf certificate for node (its common name), valid from
// now for routeLeafLife, naming RouteServerName, for server and client
// authentication, with a fresh Ed25519 key.
func (ca *RouteCA) Issue(node string, now time.Time) (*tls.Certificate, error) {
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("bus: route certificate: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("bus: route certificate: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial.Add(serial, big.NewInt(2)), // never the CA's 1
		Subject:      pkix.Name{Organization: []string{"Ardea"}, CommonName: node},
		DNSNames:     []string{RouteServerName},
		NotBefore:    now.Add(-routeLeafBackdate),
		NotAfter:     now.Add(routeLeafLife),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, pub, ca.key)
	if err != nil {
		return nil, fmt.Errorf("bus: route certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("bus: route certificate: %w", err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// TLS is node's RouteTLS from the CA: the CA alone is trusted, peers
// are verified by RouteServerName, and the node's leaf certificate is
// issued at the first call of Certificate (Cluster's start) and again
// at the first handshake after less than routeLeafRenew of it is left.
func (ca *RouteCA) TLS(node string) *RouteTLS { return ca.tlsAt(node, time.Now) }

// tlsAt is TLS with its clock.
func (ca *RouteCA) tlsAt(node string, clock func() time.Time) *RouteTLS {
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	var mu sync.Mutex
	var cur *tls.Certificate
	get := func() (*tls.Certificate, error) {
		mu.Lock()
		defer mu.Unlock()
		now := clock()
		if cur == nil || cur.Leaf.NotAfter.Sub(now) < routeLeafRenew {
			c, err := ca.Issue(node, now)
			if err != nil {
				return nil, err
			}
			cur = c
		}
		return cur, nil
	}
	return &RouteTLS{Certificate: get, CAs: pool, ServerName: RouteServerName}
}

// LoadRouteTLS is the RouteTLS of an operator's own PKI: this node's
// certificate (certFile, PEM, with any intermediates after it) and key
// (keyFile, PEM, mode 0600 or narrower), and the CAs that sign every
// node's certificate (caFile, PEM). The certificate must allow server
// and client authentication and name serverName, the name every node's
// certificate carries; an empty serverName verifies the host of the
// route's URL instead (and, for a route to an IP address nats-server
// learned from the others, the host of the first route given by name).
// The files are read again at every route handshake and a changed
// certificate or key is used from then on (a renewal in place); a pair
// that does not load leaves the previous one in use. A new caFile needs
// a restart.
func LoadRouteTLS(certFile, keyFile, caFile, serverName string) (*RouteTLS, error) {
	b, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("route TLS CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("route TLS CA %s: no PEM certificate in it", caFile)
	}
	kp := &filePair{cert: certFile, key: keyFile}
	if _, err := kp.load(); err != nil {
		return nil, err
	}
	return &RouteTLS{Certificate: kp.get, CAs: pool, ServerName: serverName}, nil
}

// filePair is a certificate and key read from files, parsed again when
// either file's content changed.
type filePair struct {
	cert, key string
	mu        sync.Mutex
	certPEM   []byte
	keyPEM    []byte
	cur       *tls.Certificate
}

func (p *filePair) get() (*tls.Certificate, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c, err := p.loadLocked()
	if err != nil && p.cur != nil {
		return p.cur, nil // keep the pair that worked
	}
	return c, err
}

func (p *filePair) load() (*tls.Certificate, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.loadLocked()
}

func (p *filePair) loadLocked() (*tls.Certificate, error) {
	ki, err := os.Stat(p.key)
	if err != nil {
		return nil, fmt.Errorf("route TLS key: %w", err)
	}
	if ki.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("route TLS key %s: mode %v lets others read it; chmod 600 %s", p.key, ki.Mode().Perm(), p.key)
	}
	cb, err := os.ReadFile(p.cert)
	if err != nil {
		return nil, fmt.Errorf("route TLS certificate: %w", err)
	}
	kb, err := os.ReadFile(p.key)
	if err != nil {
		return nil, fmt.Errorf("route TLS key: %w", err)
	}
	if p.cur != nil && bytes.Equal(cb, p.certPEM) && bytes.Equal(kb, p.keyPEM) {
		return p.cur, nil
	}
	c, err := tls.X509KeyPair(cb, kb)
	if err != nil {
		// tls's errors say what is wrong, never the key's bytes.
		return nil, fmt.Errorf("route TLS: load %s and %s: %w", p.cert, p.key, err)
	}
	if !usable(c.Leaf) {
		return nil, fmt.Errorf("route TLS certificate %s: its extended key usage must allow both server and client authentication (every node is both)", p.cert)
	}
	p.cur, p.certPEM, p.keyPEM = &c, cb, kb
	return p.cur, nil
}

// usable reports a certificate good for both ends of a route: no
// extended key usage (any) or both server and client authentication.
func usable(c *x509.Certificate) bool {
	if c == nil || len(c.ExtKeyUsage) == 0 {
		return true
	}
	var srv, cli bool
	for _, u := range c.ExtKeyUsage {
		srv = srv || u == x509.ExtKeyUsageServerAuth || u == x509.ExtKeyUsageAny
		cli = cli || u == x509.ExtKeyUsageClientAuth || u == x509.ExtKeyUsageAny
	}
	return srv && cli
}

// fingerprint is a DER certificate's SHA-256 in hex.
func fingerprint(der []byte) string {
	return fmt.Sprintf("sha256:%x", sha256.Sum256(der))
}

// PEM is the CA's certificate as PEM (public).
func (ca *RouteCA) PEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw})
}
