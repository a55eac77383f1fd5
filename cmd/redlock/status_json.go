package main

import (
	"time"

	"github.com/redlock-go/redlock"
)

// statusJSON is status --json's output.
type statusJSON struct {
	Name     string       `json:"name"`
	Key      string       `json:"key"`
	Quorum   int          `json:"quorum"`
	State    string       `json:"state"`  // "held", "free" or "unknown"
	Holder   string       `json:"holder"` // the token on the most nodes, "" when none
	HeldOn   int          `json:"held_on"`
	Set      int          `json:"set,omitempty"` // k when the holder holds the name as one of a set of k names
	Answered int          `json:"answered"`      // nodes that answered
	Depth    int          `json:"depth"`         // the longest queue of a node
	Head     *waiterJSON  `json:"head"`          // the first waiter, null when nobody waits
	Waiters  []waiterJSON `json:"waiters"`       // the nodes' waiters merged, the head first
	Nodes    []nodeJSON   `json:"nodes"`
	Shared   bool         `json:"shared,omitempty"`  // readers hold the lock (holder "")
	Readers  []readerJSON `json:"readers,omitempty"` // the nodes' first readers merged, the soonest to expire first
}

type readerJSON struct {
	Token    string `json:"token"`
	TTLms    int64  `json:"ttl_ms"`
	Nodes    int    `json:"nodes"`
	Metadata string `json:"metadata,omitempty"`
}

type waiterJSON struct {
	Token  string    `json:"token"`
	Client string    `json:"client"`
	Since  time.Time `json:"since"`            // when it began to wait, by its Client's clock
	AgeMs  int64     `json:"age_ms"`           // how long it has waited, by the node's clock
	Nodes  int       `json:"nodes"`            // how many nodes list it
	Shared bool      `json:"shared,omitempty"` // it waits to read
}

func jsonWaiters(ws []redlock.Waiter) []waiterJSON {
	out := make([]waiterJSON, len(ws))
	for i, w := range ws {
		out[i] = waiterJSON{Token: w.Token, Client: w.Client, Since: w.Since, AgeMs: w.Age.Milliseconds(), Nodes: w.Nodes, Shared: w.Shared}
	}
	return out
}

type nodeJSON struct {
	Node      int          `json:"node"`
	Addr      string       `json:"addr"`
	Reachable bool         `json:"reachable"`
	Error     string       `json:"error,omitempty"`
	Held      bool         `json:"held"`
	Token     string       `json:"token,omitempty"`
	Reentrant bool         `json:"reentrant,omitempty"`
	Metadata  string       `json:"metadata,omitempty"`
	Holds     int          `json:"holds"`
	TTLms     int64        `json:"ttl_ms"` // -1: no expiry; 0 when not held
	Fence     uint64       `json:"fence"`  // the node's fence counter, 0 when none
	Depth     int          `json:"depth"`  // how many wait in the node's queue
	Waiters   []waiterJSON `json:"waiters"`
	Readers   int          `json:"readers,omitempty"` // live readers, when readers hold the lock
}

func jsonState(st *redlock.LockState, lockKey string, nodes []node) statusJSON {
	out := statusJSON{Name: st.Name, Key: lockKey, Quorum: st.Quorum, State: "unknown", Holder: st.Holder, HeldOn: st.HeldOn, Set: st.Set,
		Answered: st.Answered, Depth: st.Depth, Waiters: jsonWaiters(st.Waiters), Nodes: make([]nodeJSON, len(st.Nodes))}
	if len(out.Waiters) > 0 {
		out.Head = &out.Waiters[0]
	}
	out.Shared = st.Shared
	for _, r := range st.ReaderList {
		out.Readers = append(out.Readers, readerJSON{Token: r.Token, TTLms: r.TTL.Milliseconds(), Nodes: r.Nodes, Metadata: r.Metadata})
	}
	switch {
	case st.Held:
		out.State = "held"
	case st.Free:
		out.State = "free"
	}
	for i, ns := range st.Nodes {
		n := nodeJSON{Node: i, Addr: nodes[i].addr, Reachable: ns.Reachable, Held: ns.Held, Token: ns.Token,
			Reentrant: ns.Reentrant, Metadata: ns.Metadata, Holds: ns.Holds, Fence: ns.Fence, Depth: ns.Depth, Waiters: jsonWaiters(ns.Waiters), Readers: ns.Readers}
		if ns.Err != nil {
			n.Error = oneLine(unwrapAll(ns.Err))
		}
		if ns.Held {
			n.TTLms = ns.TTL.Milliseconds()
			if ns.TTL < 0 {
				n.TTLms = -1
			}
		}
		out.Nodes[i] = n
	}
	return out
}
