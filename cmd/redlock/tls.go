package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"os"
	"strings"
)

// tlsFlags are the TLS files for rediss:// nodes: --cacert, --cert and
// --key, falling back to $REDLOCK_CACERT, $REDLOCK_CERT and $REDLOCK_KEY
// like every flag.
type tlsFlags struct {
	cacert string
	cert   string
	key    string
}

// register adds --cacert, --cert and --key.
func (t *tlsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&t.cacert, "cacert", "", "PEM `file` of the CA that signed the rediss:// nodes' certificates (default: the system's CAs)")
	fs.StringVar(&t.cert, "cert", "", "PEM `file` of the client certificate, for nodes run with tls-auth-clients (with --key)")
	fs.StringVar(&t.key, "key", "", "PEM `file` of the client certificate's private key (with --cert)")
}

// config loads the files into a TLS configuration for the nodes: nil when
// no TLS flag is given. Its errors say which flag to fix.
func (t *tlsFlags) config(cmd string) (*tls.Config, error) {
	if t.cacert == "" && t.cert == "" && t.key == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if t.cacert != "" {
		pem, err := os.ReadFile(t.cacert)
		if err != nil {
			return nil, usagef(cmd, "redlock: --cacert/$REDLOCK_CACERT: %v: give the PEM file of the CA that signed the nodes' certificates", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, usagef(cmd, "redlock: --cacert/$REDLOCK_CACERT: %s holds no PEM certificate: give the CA's certificate (-----BEGIN CERTIFICATE-----)", t.cacert)
		}
	}
	switch {
	case t.cert != "" && t.key != "":
		pair, err := tls.LoadX509KeyPair(t.cert, t.key)
		if err != nil {
			return nil, usagef(cmd, "redlock: --cert/--key: %v: give the client certificate and its private key as PEM files", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	case t.cert != "" || t.key != "":
		return nil, usagef(cmd, "redlock: --cert and --key go together: give both (or $REDLOCK_CERT and $REDLOCK_KEY), or neither")
	}
	return cfg, nil
}

// withTLS puts the files' CA and client certificate into the TLS
// configuration go-redis made from a node's URL (nil for redis://), which
// keeps its server name. files is nil when no TLS flag is given.
func withTLS(node, files *tls.Config) error {
	if files == nil {
		return nil
	}
	if node == nil {
		return errors.New("--cacert, --cert or --key is given but this node is not TLS: use rediss:// (or drop the TLS flags and $REDLOCK_CACERT, $REDLOCK_CERT, $REDLOCK_KEY)")
	}
	if files.RootCAs != nil {
		node.RootCAs = files.RootCAs
	}
	node.Certificates = files.Certificates
	node.MinVersion = max(node.MinVersion, files.MinVersion)
	return nil
}

// tlsHint says what to do about a TLS failure to reach a node, or "".
func tlsHint(err error) string {
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	switch {
	case errors.As(err, &unknown):
		return " (the node's certificate is not signed by a CA in --cacert/$REDLOCK_CACERT or the system's CAs: give the CA that signed it with --cacert)"
	case errors.As(err, &host):
		return " (the node's certificate does not name the host of its URL: use a host name or IP address the certificate lists)"
	case errors.As(err, &invalid):
		return " (the node's certificate is not valid: expired, or not for a server; renew it)"
	case strings.Contains(err.Error(), "certificate required"):
		return " (the node requires a client certificate: give --cert and --key)"
	case strings.Contains(err.Error(), "first record does not look like a TLS handshake"):
		return " (the node does not speak TLS: use redis:// for it)"
	}
	return ""
}
