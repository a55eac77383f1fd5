package redlock

import (
	"strings"
	"time"
	"unicode/utf8"
)

// What a call refuses before it sends anything, each with what to do.

// MaxNameLen is the longest lock name Acquire accepts, in bytes.
const MaxNameLen = 512

// MaxMetadataLen is the longest [AcquireOptions].Metadata accepted, in bytes.
const MaxMetadataLen = 256

// checkName says what is wrong with a lock name, if anything. Braces would
// change the Redis Cluster hash tag of the keys ({name}), so that the lock
// key and its fence counter could land in different slots.
func checkName(name string) error {
	switch {
	case name == "":
		return invalidf("redlock: empty lock name: name the resource the lock protects, e.g. \"orders:42\"")
	case len(name) > MaxNameLen:
		return invalidf("redlock: lock name of %d bytes is longer than %d: use a shorter name, e.g. a hash of the resource", len(name), MaxNameLen)
	case strings.ContainsAny(name, "{}"):
		return invalidf("redlock: lock name %q contains '{' or '}': the name is the Redis Cluster hash tag of the lock's keys; leave braces out", name)
	}
	return nil
}

// checkTTL says what is wrong with ttl, if anything.
func (c *Client) checkTTL(ttl time.Duration) error {
	if ttl < time.Millisecond {
		return invalidf("redlock: TTL %v is too short: Redis expires keys in whole milliseconds; use at least a few hundred milliseconds", ttl)
	}
	if d := drift(ttl, c.opts.DriftFactor); ttl <= d {
		return invalidf("redlock: TTL %v is not longer than its drift allowance %v: no lease could ever be valid; raise the TTL", ttl, d)
	}
	return nil
}

// checkMetadata says what is wrong with a holder's metadata, if anything.
func checkMetadata(m string) error {
	switch {
	case len(m) > MaxMetadataLen:
		return invalidf("redlock: Metadata of %d bytes is longer than %d: keep it to a short holder id such as \"host:pid:job\"", len(m), MaxMetadataLen)
	case !utf8.ValidString(m):
		return invalidf("redlock: Metadata is not valid UTF-8: use printable text such as \"host:pid:job\"")
	}
	return nil
}
