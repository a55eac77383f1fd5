-- The prelude to release.lua and cleanup.lua of a lock whose waiters are
-- told on its own channel (form.go): "<prefix>released:<lock key>", the
-- prefix being what comes before the lock key's '{' (KeyPrefix has none).
local channel = string.match(KEYS[1], '^(.-){') .. 'released:' .. KEYS[1]
