package redlock

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Handle identifies a held lock so that another process can resume it: the
// lock's name, its token (the proof of ownership), the attempt of its
// Acquire call that won it (whose value a resumed share counts on the
// nodes, as the lock does), its fence and whether it is re-entrant. It carries no deadline: whoever resumes it computes its own
// from its own round with the nodes, never trusting the sender's clock.
//
// Send it as text (MarshalText, or JSON, which uses it) and read it back with
// [ParseHandle]. The text holds the token: whoever has it can extend and
// release the lock, so pass it as you would a password. String leaves the
// token out. The zero Handle is invalid.
type Handle struct {
	name    string
	token   string
	attempt int // the winning attempt of a plain lock (0: the releases' grants); 0 for a re-entrant one
	fence   uint64
	kind    byte // the lock's form: 'p' plain, 'm' with metadata, 'r' re-entrant, 's' shared (form.handleKind)
}

// handleVersion starts every handle's text form. Version 1 had no attempt:
// a share resumed from it could not tell the lease's value from a failed
// attempt's, and is refused.
const handleVersion = "rlh2"

// Handle returns the lock's handle, for [Client.Resume] in another process.
func (l *Lock) Handle() Handle {
	h := Handle{name: l.ls.name, token: l.ls.token, fence: l.fence, kind: l.ls.form.handleKind()}
	if h.kind != 'r' && len(l.won) > len(l.ls.prefix) {
		h.attempt, _ = strconv.Atoi(l.won[len(l.ls.prefix):]) // what counted made of it
	}
	return h
}

// Name returns the name of the handle's lock.
func (h Handle) Name() string { return h.name }

// Fence returns the fence of the handle's lock (0: fencing off).
func (h Handle) Fence() uint64 { return h.fence }

// Reentrant reports whether the handle's lock is re-entrant: then
// [Client.Resume] adds a hold of its own, else it shares the lock's one
// lease.
func (h Handle) Reentrant() bool { return h.kind == 'r' }

// String describes the handle without its token.
func (h Handle) String() string {
	return fmt.Sprintf("redlock.Handle{name %q, fence %d, reentrant %v}", h.name, h.fence, h.Reentrant())
}

// MarshalText returns the handle as one line of URL-safe text:
// "rlh2.<p|m|r>.<fence>.<token>.<attempt>.<name in base64>", the kind
// being the lock's form: plain, with metadata, re-entrant.
func (h Handle) MarshalText() ([]byte, error) {
	if err := h.check(); err != nil {
		return nil, err
	}
	kind := string(h.kind)
	return []byte(strings.Join([]string{handleVersion, kind, strconv.FormatUint(h.fence, 10), h.token,
		strconv.Itoa(h.attempt), base64.RawURLEncoding.EncodeToString([]byte(h.name))}, ".")), nil
}

// UnmarshalText reads a handle written by MarshalText.
func (h *Handle) UnmarshalText(b []byte) error {
	p, err := ParseHandle(string(b))
	if err != nil {
		return err
	}
	*h = p
	return nil
}

// ParseHandle reads a handle written by [Handle.MarshalText]. It refuses
// text that a lock cannot have made: a token that is not one of ours (22
// characters of URL-safe base64), a name [Client.Acquire] would refuse, or
// more than a few hundred bytes in all, so that [Client.Resume] never sends
// an untrusted handle's bulk to the nodes.
func ParseHandle(s string) (Handle, error) {
	bad := func(why string) (Handle, error) {
		return Handle{}, invalidf("redlock: not a lock handle (%s): pass the text of Lock.Handle().MarshalText unchanged", why)
	}
	if len(s) > maxHandleLen {
		return bad(fmt.Sprintf("%d bytes; a handle is at most %d", len(s), maxHandleLen))
	}
	f := strings.Split(s, ".")
	if len(f) > 0 && f[0] == "rlh1" {
		return bad("version rlh1, from an earlier redlock that did not record the winning attempt; " +
			"resume it with that version, or acquire the lock anew once it expires")
	}
	if len(f) != 6 || f[0] != handleVersion {
		return bad("want 6 dot-separated parts starting " + handleVersion)
	}
	if f[1] != "r" && f[1] != "p" && f[1] != "m" && f[1] != "s" {
		return bad("kind " + strconv.Quote(f[1]))
	}
	fence, err := strconv.ParseUint(f[2], 10, 64)
	if err != nil {
		return bad("fence " + strconv.Quote(f[2]))
	}
	attempt, err := strconv.Atoi(f[4])
	if err != nil || attempt < 0 || f[4] != strconv.Itoa(attempt) || f[1] == "r" && attempt != 0 {
		return bad("attempt " + strconv.Quote(f[4]))
	}
	name, err := base64.RawURLEncoding.DecodeString(f[5])
	if err != nil {
		return bad("name is not base64")
	}
	h := Handle{name: string(name), token: f[3], attempt: attempt, fence: fence, kind: f[1][0]}
	if err := h.check(); err != nil {
		return Handle{}, err
	}
	return h, nil
}

// maxHandleLen bounds a handle's text: the version, kind, a uint64 fence,
// a token and a name of MaxNameLen bytes in base64, with the dots.
const maxHandleLen = len(handleVersion) + 2 + 20 + 1 + tokenLen + 1 + 19 + 1 + (MaxNameLen*4+2)/3 + 1

// check says what is wrong with h, if anything. A token is what newToken
// makes: tokenLen characters of unpadded URL-safe base64, nothing else a
// node would be sent.
func (h Handle) check() error {
	if len(h.token) != tokenLen || strings.Trim(h.token, tokenAlphabet) != "" || h.kind != 'p' && h.kind != 'm' && h.kind != 'r' && h.kind != 's' {
		return invalidf("redlock: invalid lock handle: use Lock.Handle or ParseHandle to make one")
	}
	return checkName(h.name)
}

// tokenAlphabet is the characters of a token (URL-safe base64).
const tokenAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// Resume makes a lock from a handle another process (or Client) sent, after
// checking with the nodes that the lock is still held under the handle's
// token. For a re-entrant lock it adds a hold of its own, as
// [Lock.Reenter] does: releasing it releases that hold only, and the nodes
// keep the lock while any hold is left. For a plain lock it shares the
// sender's one lease: an extend round makes the key live at least ttl more
// (never less than it had: no share shortens another's lease), and
// releasing either lock deletes the key for both.
//
// The returned lock has the handle's name, token and fence; its local
// deadline counts from the start of Resume's own round (ttl less the time
// it took and the drift allowance), whatever the sender's deadline was.
// Resume fails with an error matching [ErrNotAcquired] when fewer than a
// quorum of the nodes hold the handle's token (a forged or stale handle, a
// lock that expired); it then leaves nothing behind.
func (c *Client) Resume(ctx context.Context, h Handle, ttl time.Duration, opts *ResumeOptions) (*Lock, error) {
	if err := c.made(); err != nil {
		return nil, err
	}
	if err := checkCtx(ctx, "Resume"); err != nil {
		return nil, err
	}
	return c.join(ctx, h, ttl, opts)
}
