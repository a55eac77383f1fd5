package redlock

// The state hash of the semaphore model (model_permit_test.go): states
// that differ only by a renaming of nodes, clients or slots, or by a shift
// of time, are one.

// hash returns the state's hash, the same for every state that differs from
// s only in ways that cannot matter, as the lock model's hash does
// (model_answers_test.go): times relative to now (clamped where they no
// longer change anything), nodes interchangeable (their signatures hashed
// in sorted order), clients interchangeable up to their tokens and, in the
// slotted design, slots interchangeable. For the last two it is the least
// hash over the renamings that sort the clients and the slots by a key that
// no renaming changes (clientKey, slotKey): a function of the state's
// orbit, and mostly one or two renamings to hash.
func (w *semWorld) hash(s *semState) uint64 {
	// (The renamings are written out for up to 3 clients and 2 slots.)
	cperms := [][semClients]uint8{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}
	sperms := [][semSlots]uint8{{0, 1, 2}, {1, 0, 2}}
	switch w.clients {
	case 1:
		cperms = cperms[:1]
	case 2:
		cperms = [][semClients]uint8{{0, 1, 2}, {1, 0, 2}}
	}
	if w.limit != 2 || w.design == semCounted {
		sperms = sperms[:1]
	}
	var ck [semClients]uint64
	for c := 0; c < w.clients; c++ {
		ck[c] = w.clientKey(s, c)
	}
	var sk [semSlots]uint64
	if len(sperms) > 1 {
		for k := 0; k < w.limit; k++ {
			sk[k] = w.slotKey(s, uint8(k))
		}
	}
	best := ^uint64(0)
	for _, p := range cperms {
		if !sortedBy(p[:w.clients], ck[:]) {
			continue
		}
		for _, q := range sperms {
			if len(sperms) > 1 && !sortedBy(q[:w.limit], sk[:]) {
				continue
			}
			best = min(best, w.hashAs(s, p, q))
		}
	}
	return best
}

// sortedBy reports whether renaming i to p[i] puts the keys in order.
func sortedBy(p []uint8, key []uint64) bool {
	var at [semClients]uint64
	for i, to := range p {
		at[to] = key[i]
	}
	for i := 1; i < len(p); i++ {
		if at[i] < at[i-1] {
			return false
		}
	}
	return true
}

// clientKey hashes what no renaming of nodes, slots or other clients
// changes about client c: its own state, its keys and its messages.
func (w *semWorld) clientKey(s *semState, c int) uint64 {
	cl := &s.cl[c]
	h := mix(uint64(cl.phase), uint64(cl.att))
	switch cl.phase {
	case spTrying:
		h = mix(h, uint64(uint8(min(s.now-cl.start, w.ttl))))
		for n := 0; n < w.nodes; n++ {
			h += mix(4, uint64(cl.rs[n]))
		}
	case spHeld:
		h = mix(h, uint64(uint32(cl.dl-s.nowMs())))
	}
	for n := 0; n < w.nodes; n++ {
		for k := 0; k < w.limit; k++ {
			if key := &s.nodes[n][k]; key.key.tok == uint8(c+1) {
				h += mix(2, uint64(key.key.att)|uint64(uint8(key.exp-s.now))<<8)
			}
		}
	}
	for i := 0; i < int(s.nmsg); i++ {
		if m := s.msgs[i]; m.client() == uint8(c) {
			h += mix(3, uint64(m.kind())|uint64(m.mode())<<2|uint64(m.att())<<4)
		}
	}
	return h
}

// slotKey hashes what no renaming of nodes, clients or other slots changes
// about slot k: its keys, the clients trying or holding it, its messages.
func (w *semWorld) slotKey(s *semState, k uint8) uint64 {
	var h uint64
	for n := 0; n < w.nodes; n++ {
		if key := &s.nodes[n][k]; key.key.tok != 0 {
			h += mix(5, uint64(key.key.att)|uint64(uint8(key.exp-s.now))<<8)
		}
	}
	for c := 0; c < w.clients; c++ {
		if cl := &s.cl[c]; cl.slot == k && (cl.phase == spTrying || cl.phase == spHeld || cl.phase == spLapsed) {
			h += mix(6, uint64(cl.phase))
		}
	}
	for i := 0; i < int(s.nmsg); i++ {
		if m := s.msgs[i]; m.slot() == k {
			h += mix(7, uint64(m.kind())|uint64(m.mode())<<2|uint64(m.att())<<4)
		}
	}
	return h
}

// hashAs hashes s with client c renamed to p[c] and slot k to q[k].
func (w *semWorld) hashAs(s *semState, p [semClients]uint8, q [semSlots]uint8) uint64 {
	var inv [semClients]uint8
	for c := 0; c < w.clients; c++ {
		inv[p[c]] = uint8(c)
	}
	var qinv [semSlots]uint8
	for k := 0; k < w.limit; k++ {
		qinv[q[k]] = uint8(k)
	}
	var msum [semNodes]uint64
	for i := 0; i < int(s.nmsg); i++ {
		m := s.msgs[i]
		r := packSemMsg(m.kind(), m.mode(), p[m.client()], 0, q[m.slot()], m.att())
		msum[m.node()] += mix(1, uint64(r))
	}
	var sig [semNodes]uint64
	for n := 0; n < w.nodes; n++ {
		var places [semSlots]uint64
		for k := 0; k < w.limit; k++ {
			key := s.nodes[n][qinv[k]]
			if key.key.tok != 0 {
				places[k] = uint64(p[key.key.tok-1]+1) | uint64(key.key.att)<<8 | uint64(uint8(key.exp-s.now))<<16
			}
		}
		if w.design == semCounted { // a node's permits are a multiset
			for i := 1; i < w.limit; i++ {
				for j := i; j > 0 && places[j] < places[j-1]; j-- {
					places[j], places[j-1] = places[j-1], places[j]
				}
			}
		}
		h := msum[n]
		for k := 0; k < w.limit; k++ {
			h = mix(h, places[k])
		}
		for k := 0; k < w.clients; k++ {
			h = mix(h, uint64(s.cl[inv[k]].rs[n]))
		}
		sig[n] = h
	}
	for i := 1; i < w.nodes; i++ {
		for j := i; j > 0 && sig[j] < sig[j-1]; j-- {
			sig[j], sig[j-1] = sig[j-1], sig[j]
		}
	}
	h := uint64(w.nodes)
	for n := 0; n < w.nodes; n++ {
		h = mix(h, sig[n])
	}
	for k := 0; k < w.clients; k++ {
		cl := &s.cl[inv[k]]
		x := uint64(cl.phase) | uint64(cl.att)<<8
		switch cl.phase {
		case spDone:
			x = uint64(cl.phase)
		case spTrying:
			x |= uint64(q[cl.slot])<<16 | uint64(uint8(min(s.now-cl.start, w.ttl)))<<24
		case spHeld:
			x |= uint64(q[cl.slot])<<16 | uint64(uint32(cl.dl-s.nowMs()))<<32
		case spLapsed:
			x |= uint64(q[cl.slot]) << 16
		}
		h = mix(h, x)
	}
	return h
}
