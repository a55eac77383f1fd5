package redlock

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// node is one Redis node as the lock sees it: something that can run
// scripts, and maybe subscribe to release notices.
type node struct {
	addr   string
	client redis.Scripter
	sub    subscriber // nil when the node cannot subscribe
}

// nodeAddr returns n's address as its client reports it, for messages.
func nodeAddr(n Node) string {
	switch v := n.(type) {
	case *redis.Client:
		return v.Options().Addr
	case *redis.ClusterClient:
		return fmt.Sprint(v.Options().Addrs)
	case *redis.Ring:
		return "ring"
	}
	return fmt.Sprintf("%T", n)
}

// isNil reports whether n is nil, or an interface holding a nil pointer
// (a *redis.Client never set).
func isNil(n any) bool {
	if n == nil {
		return true
	}
	switch v := reflect.ValueOf(n); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// checkDistinct says which nodes are listed twice: the same client, or
// clients that share an address as far as their options tell (see
// endpoints).
func checkDistinct(nodes []Node) error {
	seen := map[string]int{}
	for i, n := range nodes {
		var ids []string
		if v := reflect.ValueOf(n); v.Kind() == reflect.Pointer {
			ids = append(ids, fmt.Sprintf("the same %T", n)+"\x00"+strconv.FormatUint(uint64(v.Pointer()), 16))
		}
		ids = append(ids, endpoints(n)...)
		for _, id := range ids {
			if j, dup := seen[id]; dup && j != i {
				what, _, _ := strings.Cut(id, "\x00")
				return invalidf("redlock: nodes %d and %d are one Redis node (%s): list each node once, or one server would cast two votes", j, i, what)
			}
			seen[id] = i
		}
	}
	return nil
}

// endpoints returns the network addresses n's options name ("address
// <network>/<address>"): one for a standalone client, every seed of a
// Cluster client, every shard of a Ring. A Sentinel failover client names
// none (its master is found through the sentinels), nor does a node that
// is not a go-redis client.
func endpoints(n Node) []string {
	id := func(network, addr string) string {
		if network == "" {
			network = "tcp"
		}
		return "address " + network + "/" + addr
	}
	var ids []string
	switch v := n.(type) {
	case *redis.Client:
		if o := v.Options(); o.Addr != "FailoverClient" {
			ids = append(ids, id(o.Network, o.Addr))
		}
	case *redis.ClusterClient:
		for _, a := range v.Options().Addrs {
			ids = append(ids, id("tcp", a))
		}
	case *redis.Ring:
		for _, a := range v.Options().Addrs {
			ids = append(ids, id("tcp", a))
		}
	}
	return ids
}
