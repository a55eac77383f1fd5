package redlocktest

import (
	"errors"
	"fmt"
	"sync"
	"time"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// netDialTimeout is the DialTimeout of the clients returned by
// Net.Clients.
const netDialTimeout = time.Second

// Net is one simulated client's own network path to every node of a
// Cluster: a TCP proxy per node, listening on a free port of 127.0.0.1. The
// proxies of a Net run in a toxiproxy-server process of its own
// (github.com/Shopify/toxiproxy/v2), driven through its HTTP API on another
// free port of 127.0.0.1 and stopped by Close. Faults injected on a Net (Down, Blackhole,
// Latency, DelayRequests, HoldRequests) affect only the connections of that Net, so two Nets on the
// same Cluster simulate two clients on either side of a partition, while
// the faults of the Cluster (Kill, Pause, ...) affect every client.
//
// A Net is created by Cluster.NewNet and closed by Close or by
// Cluster.Close. Its methods are safe for concurrent use; fault changes
// on the same Net are serialized. Node indexes run from 0 to Len()-1 of
// the Cluster; the methods taking an index panic if it is out of range.
type Net struct {
	c       *Cluster
	name    string
	server  *toxiServer // the process running the proxies
	addrs   []string    // proxy addresses; fixed
	clients []*redis.Client
	holds   *holds   // HoldRequests, in the clients' hooks
	log     faultLog // the Cluster's recorder, as this client

	mu     sync.Mutex // protects links and closed; serializes fault changes
	links  []*link
	closed bool
}

// link is the proxy of one node and the faults injected on it.
type link struct {
	name     string
	addr     string            // the proxy's address; fixed
	upstream string            // the node's address
	proxy    *toxiclient.Proxy // in n.server, named "node<i>"
	down     bool              // proxy disabled: not listening
	hole     bool              // timeout toxics installed (possibly only one)
	latency  time.Duration     // 0: no latency toxic on the replies (Latency)
	delay    time.Duration     // 0: no latency toxic on the requests (DelayRequests)
}

// NewNet starts a toxiproxy-server process and in it one proxy per node on
// free ports of 127.0.0.1, each forwarding to the node's address, and one
// go-redis client per node through them. name identifies the simulated
// client (Name, the fault log) and must not be empty; it need not be
// unique. The proxies keep forwarding to the same address across Stop,
// Kill, Restart and RestartEmpty of the node.
//
// The first NewNet of a process finds or builds the toxiproxy-server binary
// (see Network faults in the package doc); it fails, saying what to do, if
// there is none and it cannot be built. NewNet also fails after Close.
// The Net is closed by Net.Close or, at the latest, by Cluster.Close.
func (c *Cluster) NewNet(name string) (*Net, error) {
	if name == "" {
		return nil, errors.New("redlocktest: NewNet: empty name; name the simulated client, e.g. \"client-1\"")
	}
	if c.closed.Load() {
		return nil, errClosed
	}
	server, err := startToxiServer()
	if err != nil {
		return nil, fmt.Errorf("redlocktest: NewNet(%q): %w", name, err)
	}
	n := &Net{
		c:      c,
		name:   name,
		server: server,
		holds:  newHolds(len(c.nodes)),
		log:    faultLog{rec: c.log.rec, client: name},
	}
	for i, nd := range c.nodes {
		// Proxy names are the server's alone (one server per Net), so the
		// Net's name, which may hold any character, stays out of the URLs.
		l := &link{name: fmt.Sprintf("node%d", i), upstream: nd.addr}
		l.proxy, err = server.api.CreateProxy(l.name, "127.0.0.1:0", l.upstream)
		if err != nil {
			server.stop()
			return nil, fmt.Errorf("redlocktest: NewNet(%q): starting the proxy for node %d: %w", name, i, server.explain(err))
		}
		l.addr = l.proxy.Listen // with the port chosen by the kernel
		n.links = append(n.links, l)
		n.addrs = append(n.addrs, l.addr)
	}
	for i, addr := range n.addrs {
		cl := redis.NewClient(&redis.Options{
			Addr:                     addr,
			MaxRetries:               -1,
			DialTimeout:              netDialTimeout,
			MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		})
		cl.AddHook(holdHook{h: n.holds, node: i})
		n.clients = append(n.clients, cl)
	}

	c.netsMu.Lock()
	defer c.netsMu.Unlock()
	if c.closed.Load() { // Close has already collected the open Nets
		n.closeLocked()
		return nil, errClosed
	}
	c.nets[n] = struct{}{}
	return n, nil
}

// Name returns the name given to NewNet.
func (n *Net) Name() string { return n.name }

// Addr returns the address of the proxy for node i, "127.0.0.1:PORT". It
// is fixed for the life of the Net, across faults and Heal.
func (n *Net) Addr(i int) string { return n.addrs[i] }

// Clients returns one go-redis client per node, in node order, connected
// through the proxies, as a new slice. The clients are created by NewNet,
// shared by all callers, safe for concurrent use, and closed by Close, so
// callers must not close them.
//
// They use the go-redis defaults (a 5s read and write timeout in
// particular) except: MaxRetries is -1, so a command that fails is not
// sent again; DialTimeout is 1s; maintenance
// notifications are off. ContextTimeoutEnabled is left false, as in most
// applications: a context deadline does not interrupt a command waiting
// for its reply, so code under test must bound each node call itself.
//
// What a command sees under each fault: Down, a "connection refused"
// error after the dialer's retries (about 0.5s); Blackhole, no answer
// until the 5s read timeout; Latency, a reply d late; a killed or stopped
// node, the connection closed by the proxy (EOF or "connection reset",
// not "connection refused": the proxy itself still accepts).
func (n *Net) Clients() []redis.UniversalClient {
	clients := make([]redis.UniversalClient, len(n.clients))
	for i, cl := range n.clients {
		clients[i] = cl
	}
	return clients
}

// Close closes the clients and the proxies with all their connections, and
// stops the toxiproxy-server process, waiting for it to exit. Calling Close
// more than once is safe; later calls return nil. After Close the fault
// methods fail; Name and Addr still work.
func (n *Net) Close() error {
	n.c.netsMu.Lock()
	delete(n.c.nets, n)
	n.c.netsMu.Unlock()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil
	}
	return n.closeLocked()
}

// closeLocked closes n; n.mu must be held or n unpublished.
func (n *Net) closeLocked() error {
	n.closed = true
	n.holds.close() // before the clients: the held requests use them
	var errs []error
	for i, cl := range n.clients {
		if err := cl.Close(); err != nil && !errors.Is(err, redis.ErrClosed) {
			errs = append(errs, fmt.Errorf("redlocktest: Net %q: closing the client of node %d: %w", n.name, i, err))
		}
	}
	n.stopProxies()
	return errors.Join(errs...)
}

// stopProxies delivers what the latency toxics of the running proxies
// hold, then stops the server process, which closes every proxy and
// connection.
func (n *Net) stopProxies() {
	for _, l := range n.links {
		if !l.down {
			_ = l.flush()
		}
	}
	n.server.stop()
}

// stop stops the proxy of l, closing its connections, if it is running.
func (l *link) stop() error {
	if l.down {
		return nil
	}
	if err := l.flush(); err != nil {
		return err
	}
	if err := l.proxy.Disable(); err != nil {
		return err
	}
	l.down = true
	return nil
}

// flush removes the latency toxics of l: a latency toxic delivers the bytes
// it holds when removed, whereas one holding bytes when its connection
// closes may never deliver them.
func (l *link) flush() error {
	for _, ls := range []latencyStream{downstreamLatency, upstreamLatency} {
		if cur := l.latencyOf(ls); *cur > 0 {
			if err := l.proxy.RemoveToxic(ls.toxic); err != nil {
				return err
			}
			*cur = 0
		}
	}
	return nil
}

func (n *Net) errClosed() error {
	return fmt.Errorf("redlocktest: Net %q is closed; create a new one with Cluster.NewNet", n.name)
}
