-- A semaphore slot's prelude to acquire.lua, after permit.lua (form.go):
-- the semaphore's fence counter (permit.lua's fenceKey), no metadata.
local metaKey, metaText = nil, nil
-- A slot is never marked: its release is announced while its gate is held
-- (channel_slot.lua).
local bargeMark = false
