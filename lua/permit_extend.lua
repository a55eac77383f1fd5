-- Extend one permit of a semaphore (permit.go) on one node: the start of
-- a script that goes on with extend.lua, as the body of slot(), and ends
-- with permit_end.lua (scripts.go), which keeps the limit key alive as long
-- as the slot.
-- KEYS: extend.lua's KEYS for the slot, then KEYS[#KEYS] the semaphore's
-- limit key; ARGV: extend.lua's ARGV, then ARGV[#ARGV] the limit. Both are
-- taken off KEYS and ARGV here, so that extend.lua finds its own layout.
-- The slot, when it is ours, backs the limit key: never stale here.
local limitKey, limit = table.remove(KEYS), table.remove(ARGV)
local stale = false
local function slot()
