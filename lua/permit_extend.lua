-- Extend one permit of a semaphore (permit.go) on one node: the start of
-- a script that goes on with the slot form's prelude (meta_none.lua,
-- meta_key.lua) and extend.lua, as the body of slot(), and ends with
-- permit_end.lua (scripts.go), which keeps the limit key alive as long as
-- the slot.
-- KEYS[1] the slot's lock key, "<base>:permit:<i>": the semaphore's limit
-- record is "<base>:permits:limit", in its slot. ARGV: extend.lua's ARGV,
-- then ARGV[#ARGV] the limit, taken off ARGV here, so that extend.lua
-- finds its own layout.
-- The slot, when it is ours, backs the limit key: never stale here.
local limitKey, limit = string.match(KEYS[1], '^(.*):permit:%d+$') .. ':permits:limit', table.remove(ARGV)
local stale, fresh = false, false
local taking = false -- permit_end.lua: the slot's script is extend.lua, held when it answers 1
local function slot()
