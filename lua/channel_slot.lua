-- The prelude to release.lua and cleanup.lua of a semaphore's slot
-- (form.go): its semaphore's waiters are told on one channel for every
-- slot, "<prefix>released:<base>:permit" for the slot key
-- "<base>:permit:<i>".
-- A slot's release is announced while the semaphore's gate
-- "<base>:permits" is held (waitMark, release.lua's common case): the
-- gate's holder is the waiter that waits for a slot (permit_wait.go). It
-- holds the gate on a quorum before it scans the slots, so each of those
-- nodes either freed the slot before the scan or announces the release
-- after it; a release that reaches none of them after the scan waits for
-- the waiter's next poll, as a lost notice does. A slot is never marked
-- (form_slot.lua: no waiter barges for it).
local slots = string.match(KEYS[1], '^(.*):%d+$') -- "<base>:permit"
local channel = string.match(KEYS[1], '^(.-){') .. 'released:' .. slots
local waitMark = slots .. 's'
