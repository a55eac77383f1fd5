package redlock

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// The Lua scripts, one file each; every file starts with its KEYS, ARGV and
// replies. Script.Run sends EVALSHA and falls back to EVAL on NOSCRIPT. The
// release and the cleanup script start with the handOn fragment
// (handon.lua), which hands a key they leave free on to the head of its
// waiting order; hold_release.lua starts with it too, for its dropDead.
var (
	//go:embed handon.lua
	handOnSrc string
	//go:embed acquire.lua
	acquireSrc string
	//go:embed extend.lua
	extendSrc string
	//go:embed release.lua
	releaseSrc string
	//go:embed cleanup.lua
	cleanupSrc string
	//go:embed fence.lua
	fenceSrc string

	acquireScript = redis.NewScript(acquireSrc)
	extendScript  = redis.NewScript(extendSrc)
	releaseScript = redis.NewScript(handOnSrc + releaseSrc)
	cleanupScript = redis.NewScript(handOnSrc + cleanupSrc)
	fenceScript   = redis.NewScript(fenceSrc)
)

// scriptHashes holds each script's SHA1, boxed once for the commands that
// carry it (read only after init).
var scriptHashes = map[*redis.Script]any{}

func init() {
	for _, s := range []*redis.Script{acquireScript, extendScript, releaseScript, cleanupScript, fenceScript} {
		scriptHashes[s] = s.Hash()
	}
}

// scriptHash returns s's SHA1 as an argument of EVALSHA.
func scriptHash(s *redis.Script) any {
	if h, ok := scriptHashes[s]; ok {
		return h
	}
	return s.Hash()
}
