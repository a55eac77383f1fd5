-- The prelude of a lock with metadata to acquire.lua (form.go): its fence
-- counter and meta key beside its key, and the text the meta key keeps,
-- "<token>:<metadata>", the last argument (taken off ARGV here).
local fenceKey, metaKey, metaText = KEYS[1] .. ':fence', KEYS[1] .. ':meta', table.remove(ARGV)
local bargeMark = true -- a refused barging attempt marks the key (queue.lua's markBarger)
