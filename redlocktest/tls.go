package redlocktest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// TLSOptions configures NewTLS. A nil *TLSOptions means defaults; so does
// the zero value of every field.
type TLSOptions struct {
	// Options are the container options: Image, NoPersistence, Args and
	// Expire apply as for New.
	Options

	// ClientAuth, if true, runs the nodes with --tls-auth-clients yes: a
	// client must present a certificate signed by the CA. Default false
	// (--tls-auth-clients no: the client only checks the server).
	ClientAuth bool

	// Plain, if true, keeps a plain TCP port open next to the TLS port
	// (PlainAddrs). Default false: --port 0, TLS only.
	Plain bool
}

const (
	tlsPort   = "6380/tcp"
	plainPort = "6379/tcp"
	certDir   = "/etc/redlocktest-tls"
)

// TLSCluster is a set of independent Redis masters that accept TLS, each
// in its own container with its TLS port published on 127.0.0.1, using
// certificates made for the run (Certs): the server certificate names
// 127.0.0.1 and localhost. It has no fault injection; Close removes it.
type TLSCluster struct {
	d       *deployment
	certs   *Certs
	auth    bool
	addrs   []string // TLS, "127.0.0.1:PORT"
	plain   []string // plain, if TLSOptions.Plain
	clients []*redis.Client
}

// NewTLS starts n independent Redis masters with --tls-port (and --port 0
// unless opts.Plain), certificates from NewCerts("127.0.0.1",
// "localhost"), and waits until each answers PING over TLS. opts may be
// nil. On failure every container already started is removed; on success
// the caller must call Close.
func NewTLS(n int, opts *TLSOptions) (*TLSCluster, error) {
	if n < 1 {
		return nil, fmt.Errorf("redlocktest: need at least 1 node, got %d", n)
	}
	var o TLSOptions
	if opts != nil {
		o = *opts
	}
	d, err := newDeployment("tls", &o.Options)
	if err != nil {
		return nil, err
	}
	certs, err := NewCerts("127.0.0.1", "localhost")
	if err != nil {
		return nil, err
	}
	c := &TLSCluster{d: d, certs: certs, auth: o.ClientAuth}
	auth := "no"
	if o.ClientAuth {
		auth = "yes"
	}
	args := []string{
		"--tls-port", "6380",
		"--tls-cert-file", certDir + "/server.pem",
		"--tls-key-file", certDir + "/server-key.pem",
		"--tls-ca-cert-file", certDir + "/ca.pem",
		"--tls-auth-clients", auth,
	}
	if !o.Plain {
		args = append(args, "--port", "0")
	}
	files := map[string][]byte{
		certDir + "/server.pem":     certs.ServerCert,
		certDir + "/server-key.pem": certs.ServerKey,
		certDir + "/ca.pem":         certs.CA,
	}
	for i := 0; i < n; i++ {
		if err := c.startNode(append(append([]string{}, d.args...), args...), files, o.Plain); err != nil {
			return nil, errors.Join(fmt.Errorf("redlocktest: TLS node %d: %w", i, err), c.Close())
		}
	}
	return c, nil
}

func (c *TLSCluster) startNode(args []string, files map[string][]byte, plain bool) error {
	s, err := c.d.start(serverSpec{args: args, files: files, publish: tlsPort})
	if err != nil {
		return err
	}
	if plain {
		// Reach the plain port on the bridge network: only the TLS port
		// is published.
		c.plain = append(c.plain, s.ip+":6379")
	}
	cl := redis.NewClient(&redis.Options{
		Addr:                     s.host,
		TLSConfig:                c.TLSConfig(),
		DialerRetries:            1,
		ContextTimeoutEnabled:    true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	c.addrs = append(c.addrs, s.host)
	c.clients = append(c.clients, cl)
	return c.d.waitReady(s, func(ctx context.Context) error { return cl.Ping(ctx).Err() })
}

// StartTLS is NewTLS for tests: it skips tb if Docker is unreachable (see
// [RequireDocker]), calls tb.Fatalf if NewTLS fails and registers Close
// with tb.Cleanup, reporting a Close error with tb.Errorf.
func StartTLS(tb testing.TB, n int, opts *TLSOptions) *TLSCluster {
	tb.Helper()
	RequireDocker(tb)
	c, err := NewTLS(n, opts)
	return started(tb, c, err)
}

// Certs returns the certificates the nodes use.
func (c *TLSCluster) Certs() *Certs { return c.certs }

// TLSConfig returns a new client TLS configuration that trusts the nodes'
// CA and, when the nodes require client certificates, presents one.
func (c *TLSCluster) TLSConfig() *tls.Config { return c.certs.ClientConfig(c.auth) }

// Addrs returns the TLS addresses of the nodes, "127.0.0.1:PORT", in node
// order, as a new slice.
func (c *TLSCluster) Addrs() []string { return append([]string(nil), c.addrs...) }

// URLs returns the nodes as rediss:// URLs, in node order.
func (c *TLSCluster) URLs() []string {
	urls := make([]string, len(c.addrs))
	for i, a := range c.addrs {
		urls[i] = "rediss://" + a
	}
	return urls
}

// PlainAddrs returns the plain TCP addresses of the nodes on the Docker
// bridge network (reachable from the host on Linux), or nil unless
// TLSOptions.Plain was set.
func (c *TLSCluster) PlainAddrs() []string { return append([]string(nil), c.plain...) }

// Clients returns ready go-redis clients of the nodes over TLS (with
// TLSConfig), in node order, as a new slice. They are shared and closed by
// Close; callers must not close them.
func (c *TLSCluster) Clients() []redis.UniversalClient {
	cs := make([]redis.UniversalClient, len(c.clients))
	for i, cl := range c.clients {
		cs[i] = cl
	}
	return cs
}

// Close removes the containers and closes the clients. Calling it again
// does nothing.
func (c *TLSCluster) Close() error {
	errs := []error{c.d.close()}
	for _, cl := range c.clients {
		if err := cl.Close(); err != nil && !errors.Is(err, redis.ErrClosed) {
			errs = append(errs, err)
		}
	}
	c.clients = nil
	return errors.Join(errs...)
}
