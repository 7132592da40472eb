package kube

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// pki is the cluster's credentials, all made fresh per cluster in its
// directory: one CA signs the apiserver's serving certificate and the
// client certificates (the apiserver trusts it as --client-ca-file), and
// a separate key pair signs service account tokens. ECDSA P-256
// throughout: generating it takes microseconds where RSA takes
// tens of milliseconds, and every component accepts it.
type pki struct {
	caPEM                    []byte
	caCert                   string // file
	servingCert, servingKey  string // files
	saPublic, saPrivate      string // files
	admin, controllerManager keyPair

	mu     sync.Mutex // serial
	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	serial int64
}

// keyPair is a client certificate and its key, PEM.
type keyPair struct{ cert, key []byte }

// The identities the cluster knows. Both are in system:masters, which
// RBAC's bootstrap policy lets do everything: the test's admin acts for
// the test, and the controller manager runs every controller under its
// own name (--use-service-account-credentials=false) instead of under
// per-controller service accounts it would otherwise need tokens for.
const (
	adminUser             = "ardea-test-admin"
	controllerManagerUser = "system:kube-controller-manager"
	mastersGroup          = "system:masters"
)

func newPKI(dir string) (*pki, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "ardea-test-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	p := &pki{caPEM: pemBlock("CERTIFICATE", caDER), caKey: caKey, serial: 1}
	if p.ca, err = x509.ParseCertificate(caDER); err != nil {
		return nil, err
	}
	serving, err := p.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:    []string{"localhost"},
	})
	if err != nil {
		return nil, err
	}
	if p.admin, err = p.clientCert(adminUser, mastersGroup); err != nil {
		return nil, err
	}
	if p.controllerManager, err = p.clientCert(controllerManagerUser, mastersGroup); err != nil {
		return nil, err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	saDER, err := x509.MarshalECPrivateKey(saKey)
	if err != nil {
		return nil, err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	p.caCert = filepath.Join(dir, "ca.crt")
	p.servingCert, p.servingKey = filepath.Join(dir, "apiserver.crt"), filepath.Join(dir, "apiserver.key")
	p.saPrivate, p.saPublic = filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	files := map[string][]byte{
		p.caCert:      p.caPEM,
		p.servingCert: serving.cert,
		p.servingKey:  serving.key,
		p.saPrivate:   pemBlock("EC PRIVATE KEY", saDER),
		p.saPublic:    pemBlock("PUBLIC KEY", saPubDER),
	}
	for path, b := range files {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// issue signs a certificate of tmpl's subject and uses with the CA, for
// a new key.
func (p *pki) issue(tmpl *x509.Certificate) (keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, err
	}
	p.mu.Lock()
	p.serial++
	tmpl.SerialNumber = big.NewInt(p.serial)
	p.mu.Unlock()
	tmpl.NotBefore, tmpl.NotAfter = p.ca.NotBefore, p.ca.NotAfter
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		return keyPair{}, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return keyPair{}, err
	}
	return keyPair{cert: pemBlock("CERTIFICATE", der), key: pemBlock("EC PRIVATE KEY", keyDER)}, nil
}

// clientCert is a client certificate the API server authenticates as
// user in groups (the subject's common name and organizations).
func (p *pki) clientCert(user string, groups ...string) (keyPair, error) {
	return p.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: groups},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// writeKubeconfig writes a kubeconfig for server as the client kp, with
// every credential inline: a program the test starts (a scheduler under
// test) reads it like any other kubeconfig.
func writeKubeconfig(path, server string, caPEM []byte, user string, kp keyPair) error {
	b64 := base64.StdEncoding.EncodeToString
	doc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: ardea-test
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: %s
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: ardea-test
  context:
    cluster: ardea-test
    user: %s
current-context: ardea-test
`, server, b64(caPEM), user, b64(kp.cert), b64(kp.key), user)
	return os.WriteFile(path, []byte(doc), 0o600)
}
