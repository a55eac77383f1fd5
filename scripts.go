package redlock

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// The Lua scripts, one file each; every file starts with its KEYS, ARGV and
// replies. Script.Run sends EVALSHA and falls back to EVAL on NOSCRIPT.
var (
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
	releaseScript = redis.NewScript(releaseSrc)
	cleanupScript = redis.NewScript(cleanupSrc)
	fenceScript   = redis.NewScript(fenceSrc)
)
