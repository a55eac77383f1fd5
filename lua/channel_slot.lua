-- The prelude to release.lua and cleanup.lua of a semaphore's slot
-- (form.go): its semaphore's waiters are told on one channel for every
-- slot, "<prefix>released:<base>:permit" for the slot key
-- "<base>:permit:<i>".
-- Every slot's release is announced: the semaphore's waiters wait for any
-- slot, and none barges (bargers: no mark to look for).
local channel = string.match(KEYS[1], '^(.-){') .. 'released:' .. string.match(KEYS[1], '^(.*):%d+$')
local bargers = nil
