package redlocktest

import "github.com/redis/go-redis/v9"

// Len returns the number of nodes.
func (c *Cluster) Len() int { return len(c.nodes) }

// Addr returns the address of node i, "127.0.0.1:PORT". It does not change
// when the node is stopped and restarted.
func (c *Cluster) Addr(i int) string { return c.nodes[i].addr }

// Addrs returns the addresses of all nodes, in node order, as a new slice.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, nd := range c.nodes {
		addrs[i] = nd.addr
	}
	return addrs
}

// Client returns the go-redis client of node i. There is one client per
// node, created by New and shared by all callers; it is safe for concurrent
// use, survives Stop/Restart of the node, and is closed by Close, so
// callers must not close it. While the node is down commands fail with a
// "connection refused" error within about 100ms. The client uses the
// go-redis defaults except: ContextTimeoutEnabled is true, so context
// deadlines bound every command; DialerRetries is 1, so a down node fails
// fast (commands are still retried MaxRetries times); maintenance
// notifications are off.
func (c *Cluster) Client(i int) *redis.Client { return c.clients[i] }

// Clients returns the shared clients of all nodes (see Client), in node
// order, as a new slice.
func (c *Cluster) Clients() []redis.UniversalClient {
	clients := make([]redis.UniversalClient, len(c.clients))
	for i, cl := range c.clients {
		clients[i] = cl
	}
	return clients
}
