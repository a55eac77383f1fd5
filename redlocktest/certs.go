package redlocktest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Certs is a throwaway public key infrastructure for TLS tests: a CA, a
// server certificate signed by it for the given hosts, and a client
// certificate signed by it (for servers that require client certificates).
// All keys are ECDSA P-256 and all certificates are valid from an hour ago
// for a day. Its fields are PEM; do not change them.
type Certs struct {
	CA         []byte // the CA's certificate
	ServerCert []byte
	ServerKey  []byte // PKCS #8
	ClientCert []byte
	ClientKey  []byte // PKCS #8

	pool   *x509.CertPool
	client tls.Certificate
}

// NewCerts makes a new CA and the server and client certificates it signs.
// hosts are the server certificate's subject alternative names: IP
// addresses or DNS names ("127.0.0.1", "localhost"). Two calls make two
// unrelated CAs, so the CA of one is the wrong CA for the other's server.
func NewCerts(hosts ...string) (*Certs, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("redlocktest: CA key: %w", err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "redlocktest CA " + randomHex(4)},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("redlocktest: CA certificate: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	c := &Certs{CA: pemOf("CERTIFICATE", caDER), pool: x509.NewCertPool()}
	c.pool.AddCert(caCert)

	leaf := func(cn string, usage x509.ExtKeyUsage, hosts []string) (certPEM, keyPEM []byte, err error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		tmpl := &x509.Certificate{
			SerialNumber: serial(),
			Subject:      pkix.Name{CommonName: cn},
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		}
		for _, h := range hosts {
			if ip := net.ParseIP(h); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else {
				tmpl.DNSNames = append(tmpl.DNSNames, h)
			}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			return nil, nil, err
		}
		pk, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return nil, nil, err
		}
		return pemOf("CERTIFICATE", der), pemOf("PRIVATE KEY", pk), nil
	}
	if c.ServerCert, c.ServerKey, err = leaf("redlocktest server", x509.ExtKeyUsageServerAuth, hosts); err != nil {
		return nil, fmt.Errorf("redlocktest: server certificate: %w", err)
	}
	if c.ClientCert, c.ClientKey, err = leaf("redlocktest client", x509.ExtKeyUsageClientAuth, nil); err != nil {
		return nil, fmt.Errorf("redlocktest: client certificate: %w", err)
	}
	if c.client, err = tls.X509KeyPair(c.ClientCert, c.ClientKey); err != nil {
		return nil, fmt.Errorf("redlocktest: client key pair: %w", err)
	}
	return c, nil
}

// ClientConfig returns a new TLS configuration that trusts only the CA and,
// if withCert, presents the client certificate.
func (c *Certs) ClientConfig(withCert bool) *tls.Config {
	cfg := &tls.Config{RootCAs: c.pool, MinVersion: tls.VersionTLS12}
	if withCert {
		cfg.Certificates = []tls.Certificate{c.client}
	}
	return cfg
}

// CertFiles are the paths of Certs written by WriteFiles.
type CertFiles struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey string
}

// WriteFiles writes the PEM files into dir (ca.pem, server.pem,
// server-key.pem, client.pem, client-key.pem; keys with mode 0600) and
// returns their paths.
func (c *Certs) WriteFiles(dir string) (CertFiles, error) {
	f := CertFiles{
		CA:         filepath.Join(dir, "ca.pem"),
		ServerCert: filepath.Join(dir, "server.pem"),
		ServerKey:  filepath.Join(dir, "server-key.pem"),
		ClientCert: filepath.Join(dir, "client.pem"),
		ClientKey:  filepath.Join(dir, "client-key.pem"),
	}
	for _, w := range []struct {
		path string
		data []byte
		mode os.FileMode
	}{
		{f.CA, c.CA, 0o644}, {f.ServerCert, c.ServerCert, 0o644}, {f.ServerKey, c.ServerKey, 0o600},
		{f.ClientCert, c.ClientCert, 0o644}, {f.ClientKey, c.ClientKey, 0o600},
	} {
		if err := os.WriteFile(w.path, w.data, w.mode); err != nil {
			return CertFiles{}, fmt.Errorf("redlocktest: %w", err)
		}
	}
	return f, nil
}

func pemOf(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// serial is a random 128-bit certificate serial number.
func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	return n.Add(n, big.NewInt(1))
}
