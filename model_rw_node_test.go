package redlock

// The node of the read-write model (model_rw_test.go): what one node keeps
// for a name with both sides, and what each script does to it, as pure
// functions of the node, the node's time and the request. The functions
// are checked against the real scripts (TestReadWriteModelStepsMatchScripts).
// Times are whole model units, absolute; a score or expiry at or before
// now is expired.

// rwReaders is the model's number of readers (clients 0 and 1); client 2 is
// the writer.
const (
	rwReaders  = 2
	rwAttempts = 2
)

// rwNode is one node: the lock key (absent, the readers' marker or a
// writer's value), its expiry, the reader set (the score of each reader's
// attempt's member, 0 when absent) and the fence counter.
type rwNode struct {
	key  uint8 // rwFree, rwMarker or rwWriter
	watt uint8 // rwWriter: the writer's attempt whose value the key holds
	exp  uint8 // the key's expiry
	rd   [rwReaders][rwAttempts + 1]uint8
	ctr  uint8
}

const (
	rwFree uint8 = iota
	rwMarker
	rwWriter
)

// rwVariant is a broken variant of the node, for the controls.
type rwVariant struct {
	readerIgnoresWriter bool // a shared acquire adds its reader whatever holds the key
	writerIgnoresReader bool // a writer's acquire takes the key over the marker
	oneTTL              bool // one expiry for every reader: each acquire and extend sets them all
}

// live reports whether member (r, att) is live on n at now.
func (n *rwNode) live(now uint8, r, att int) bool { return n.rd[r][att] > now }

// purge drops the expired readers.
func (n *rwNode) purge(now uint8) {
	for r := range n.rd {
		for a := range n.rd[r] {
			if n.rd[r][a] <= now {
				n.rd[r][a] = 0
			}
		}
	}
}

// lastReader returns the latest live score, 0 when no reader is live.
func (n *rwNode) lastReader() uint8 {
	var m uint8
	for r := range n.rd {
		for _, s := range n.rd[r] {
			m = max(m, s)
		}
	}
	return m
}

// nodeExpire is the passing of time to now: an expired key goes, and with
// the marker the reader set (it expires with it).
func nodeRWExpire(n rwNode, now uint8) rwNode {
	if n.key != rwFree && n.exp <= now {
		n.key, n.watt, n.exp = rwFree, 0, 0
		n.rd = [rwReaders][rwAttempts + 1]uint8{}
	}
	return n
}

// nodeRWShared is rw_shared_acquire.lua (barging) for reader r's attempt
// att with ttl: it returns the node, whether the reader entered, and the
// fence it took.
func nodeRWShared(n rwNode, now, ttl uint8, r, att int, v rwVariant) (rwNode, bool, uint8) {
	switch {
	case n.key == rwWriter && !v.readerIgnoresWriter:
		return n, false, 0
	case n.key == rwFree:
		n.key, n.exp = rwMarker, now+ttl
		n.rd = [rwReaders][rwAttempts + 1]uint8{}
		n.rd[r][att] = now + ttl
	default:
		n.purge(now)
		n.rd[r][att] = max(n.rd[r][att], now+ttl)
		if n.key == rwMarker {
			n.exp = max(n.exp, now+ttl)
		}
	}
	if v.oneTTL {
		n.setAll(now + ttl)
	}
	n.ctr++
	return n, true, n.ctr
}

// setAll is the broken one-TTL set: every live reader and the key expire at e.
func (n *rwNode) setAll(e uint8) {
	for r := range n.rd {
		for a := range n.rd[r] {
			if n.rd[r][a] != 0 {
				n.rd[r][a] = e
			}
		}
	}
	if n.key == rwMarker {
		n.exp = e
	}
}

// nodeRWSharedExtend is rw_shared_extend.lua for the member (r, won).
func nodeRWSharedExtend(n rwNode, now, ttl uint8, r, won int, v rwVariant) (rwNode, bool) {
	if n.key != rwMarker || !n.live(now, r, won) {
		return n, false
	}
	n.rd[r][won] = max(n.rd[r][won], now+ttl)
	n.exp = max(n.exp, now+ttl)
	if v.oneTTL {
		n.setAll(now + ttl)
	}
	return n, true
}

// nodeRWSharedEnd is rw_shared_release.lua: with att 0 the release of
// reader r (every attempt's member), else the cleanup of attempt att. It
// returns whether a member went.
func nodeRWSharedEnd(n rwNode, now uint8, r, att int) (rwNode, bool) {
	gone := false
	for a := 1; a <= rwAttempts; a++ {
		if (att == 0 || a == att) && n.rd[r][a] != 0 {
			n.rd[r][a], gone = 0, true
		}
	}
	if n.key == rwWriter {
		return n, gone
	}
	n.purge(now)
	if last := n.lastReader(); last != 0 {
		if n.key == rwMarker {
			n.exp = last
		}
		return n, gone
	}
	n.key, n.exp = rwFree, 0
	return n, gone
}

// nodeRWWrite is acquire.lua for the writer's attempt att (barging).
func nodeRWWrite(n rwNode, now, ttl uint8, att int, v rwVariant) (rwNode, bool, uint8) {
	switch {
	case n.key == rwFree || n.key == rwMarker && v.writerIgnoresReader:
		n.key, n.watt, n.exp = rwWriter, uint8(att), now+ttl
	case n.key == rwWriter && int(n.watt) <= att:
		n.watt, n.exp = uint8(att), max(n.exp, now+ttl)
	default:
		return n, false, 0
	}
	n.ctr++
	return n, true, n.ctr
}

// nodeRWWriteExtend is extend.lua for the writer's lease won by att.
func nodeRWWriteExtend(n rwNode, now, ttl uint8, won int) (rwNode, bool) {
	if n.key != rwWriter || int(n.watt) != won {
		return n, false
	}
	n.exp = max(n.exp, now+ttl)
	return n, true
}

// nodeRWWriteEnd is release.lua (att 0: any attempt's value) or cleanup.lua
// (exactly attempt att's).
func nodeRWWriteEnd(n rwNode, att int) (rwNode, bool) {
	if n.key != rwWriter || att != 0 && int(n.watt) != att {
		return n, false
	}
	n.key, n.watt, n.exp = rwFree, 0, 0
	return n, true
}
