-- The prelude to release.lua and cleanup.lua of a lock whose waiters are
-- told on its own channel (form.go): "<prefix>released:<lock key>", the
-- prefix being what comes before the lock key's '{' (KeyPrefix has none).
-- Its barging waiters mark the lock key (waitMark, queue.lua's
-- markBarger): a release nobody queues for announces itself only while one
-- is marked.
local channel = string.match(KEYS[1], '^(.-){') .. 'released:' .. KEYS[1]
local waitMark = KEYS[1] .. ':b'
