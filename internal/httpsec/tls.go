package httpsec

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ardea-dev/ardea/internal/auth"
)

// Cert is the API's TLS configuration and where it came from.
type Cert struct {
	Config   *tls.Config
	CertFile string
	KeyFile  string
	// Fingerprint is the leaf certificate's SHA-256, as
	// `openssl x509 -fingerprint -sha256` prints it (AB:CD:...): what a
	// client pins for a self-signed certificate.
	Fingerprint string
	// Generated says GenerateSelfSigned made a new pair (rather than
	// reusing the one on disk).
	Generated bool
}

// serverTLS is the server side's settings: TLS 1.2 or later.
func serverTLS(c tls.Certificate) *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{c}}
}

// LoadTLS loads a certificate and key (PEM) for the API (--tls-cert,
// --tls-key).
func LoadTLS(certFile, keyFile string) (*Cert, error) {
	c, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("tls: load %s and %s: %w", certFile, keyFile, err)
	}
	return &Cert{Config: serverTLS(c), CertFile: certFile, KeyFile: keyFile, Fingerprint: Fingerprint(c.Certificate[0])}, nil
}

// Fingerprint returns a DER certificate's SHA-256 as AB:CD:....
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	h := strings.ToUpper(hex.EncodeToString(sum[:]))
	var b strings.Builder
	for i := 0; i < len(h); i += 2 {
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteString(h[i : i+2])
	}
	return b.String()
}

// Self-signed certificates' files under the data dir, and their life.
const (
	selfSignedDir   = "tls"
	selfSignedCert  = "api.crt"
	selfSignedKey   = "api.key"
	selfSignedLife  = 397 * 24 * time.Hour // browsers refuse longer ones
	selfSignedRenew = 30 * 24 * time.Hour  // a new pair when less is left
)

// GenerateSelfSigned returns the API's self-signed pair under
// <dataDir>/tls (api.crt, api.key, both mode 0600 in a 0700 directory):
// the one there if it parses, covers hosts and has more than 30 days left,
// else a new one (ECDSA P-256, valid 397 days) for hosts plus localhost,
// 127.0.0.1 and ::1. `ardea local --tls` prints the fingerprint for
// clients to pin.
func GenerateSelfSigned(dataDir string, hosts []string) (*Cert, error) {
	dir := filepath.Join(dataDir, selfSignedDir)
	certFile, keyFile := filepath.Join(dir, selfSignedCert), filepath.Join(dir, selfSignedKey)
	want := selfSignedHosts(hosts)
	if c, err := LoadTLS(certFile, keyFile); err == nil && reusable(c, want) {
		return c, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("tls: generate key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("tls: serial: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{Organization: []string{"Ardea"}, CommonName: "ardea API (self-signed)"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(selfSignedLife),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	for _, h := range want {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("tls: create certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("tls: encode key: %w", err)
	}
	// The key first: a certificate on disk without its key would be
	// reused by nobody, a key without its certificate is regenerated.
	if err := writeFile0600(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})); err != nil {
		return nil, err
	}
	if err := writeFile0600(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})); err != nil {
		return nil, err
	}
	c, err := LoadTLS(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	c.Generated = true
	return c, nil
}

func selfSignedHosts(hosts []string) []string {
	out := []string{"localhost", "127.0.0.1", "::1"}
	for _, h := range hosts {
		if hh, _, err := net.SplitHostPort(h); err == nil {
			h = hh
		}
		h = canonHost(h)
		if h != "" && !slices.Contains(out, h) && (net.ParseIP(h) == nil || !net.ParseIP(h).IsUnspecified()) {
			out = append(out, h)
		}
	}
	return out
}

// reusable reports whether c covers hosts and has long enough left.
func reusable(c *Cert, hosts []string) bool {
	leaf, err := x509.ParseCertificate(c.Config.Certificates[0].Certificate[0])
	if err != nil || time.Until(leaf.NotAfter) < selfSignedRenew {
		return false
	}
	for _, h := range hosts {
		if leaf.VerifyHostname(h) != nil {
			return false
		}
	}
	return true
}

// writeFile0600 writes a file readable by its owner only, atomically.
func writeFile0600(path string, data []byte) error {
	if err := auth.WriteSecretFile(path, data); err != nil {
		return fmt.Errorf("tls: write %s: %w", path, err)
	}
	return nil
}

// PinnedClientTLS is a client configuration that accepts exactly the
// server certificate whose Fingerprint is fp (the self-signed case: no CA
// to trust, the fingerprint printed by `ardea local --tls` instead).
func PinnedClientTLS(fp string) *tls.Config {
	want := strings.ToUpper(strings.ReplaceAll(fp, ":", ""))
	return &tls.Config{
		MinVersion:         tls.VersionTLS12,
		InsecureSkipVerify: true, // replaced by the pin below
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 {
				return errors.New("tls: the server sent no certificate")
			}
			got := Fingerprint(raw[0])
			if strings.ReplaceAll(got, ":", "") != want {
				return fmt.Errorf("tls: the server's certificate %s is not the pinned %s", got, fp)
			}
			return nil
		},
	}
}
