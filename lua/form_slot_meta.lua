-- The prelude to acquire.lua of a semaphore slot with metadata, after
-- permit.lua (form.go): the semaphore's fence counter (permit.lua's
-- fenceKey); the slot's meta key beside its key, and its text, the last
-- argument.
local metaKey, metaText = KEYS[1] .. ':meta', table.remove(ARGV)
-- A slot is never marked: its release is announced while its gate is held
-- (channel_slot.lua).
local bargeMark = false
