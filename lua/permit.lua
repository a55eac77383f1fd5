-- Take one slot of a semaphore (permit.go) on one node: the start of a
-- script that goes on with the slot form's prelude (form_slot.lua,
-- form_slot_meta.lua) and acquire.lua, as the body of slot(), and ends with
-- permit_end.lua (scripts.go). A slot is a lock key of its own; this part
-- checks what the semaphore adds, then acquire.lua takes the slot as it
-- takes a lock (barging: the semaphore's waiters queue at its gate).
-- KEYS[1] the slot's lock key, "<base>:permit:<i>" (permit_keys.go): the
-- semaphore's keys are derived from it, in its slot: its gate
-- "<base>:permits" (the lock its waiters queue for), its limit record
-- "<base>:permits:limit" and its fence counter "<base>:permits:fence"
-- (fenceKey, which the slot form's prelude sets).
-- ARGV: acquire.lua's ARGV (and the slot's metadata text), then
-- ARGV[#ARGV-1] the limit, a decimal, and ARGV[#ARGV] "1" when the caller
-- yields to a waiter holding the gate, "0" for the gate's holder itself.
-- The two last arguments are taken off ARGV here, so that acquire.lua
-- finds its own layout.
-- The limit key holds the limit the semaphore's live slots on this node
-- were taken with, and lives at least as long as each of them
-- (permit_end.lua). It is in force while one of those slots is live here
-- (a slot below the limit it names, <base>:permit:<i> beside
-- <base>:permits:limit): then a caller with another limit gets the error
-- LIMIT and nothing is written, so that the slots live on one node at once
-- were all taken with one limit. A record no live slot backs (its permits
-- released, or a failed attempt's slot cleaned up) is stale: it is
-- ignored, and overwritten when the slot is granted.
-- A yielding caller gets "0:0" (the slot may be free, but another waiter
-- comes first) while the gate is held: a freed permit goes to the waiter
-- that has waited longest.
-- A fenced permit needs the counter below 2^53-1 before its INCR: its
-- fence is the counter times 1024 (MaxPermits) plus the slot, at most
-- (2^53-1)*1024 + 1023 = 2^63-1, exact in 64 bits.
local base = string.match(KEYS[1], '^(.*):permit:%d+$')
local gateKey, limitKey, fenceKey = base .. ':permits', base .. ':permits:limit', base .. ':permits:fence'
local yield, limit = table.remove(ARGV), table.remove(ARGV)
local stale = false -- the limit key holds a record no live slot backs
local had = redis.call('GET', limitKey)
local fresh = not had -- no record: permit_end.lua writes one
if had and had ~= limit then
  local slots = {}
  for i = 0, math.min(math.floor(tonumber(had) or 0), 1024) - 1 do
    slots[#slots + 1] = base .. ':permit:' .. i
  end
  if #slots > 0 and redis.call('EXISTS', unpack(slots)) > 0 then
    return redis.error_reply('LIMIT semaphore ' .. limitKey .. ' is in use with limit ' .. string.sub(had, 1, 20) ..
      ', not ' .. limit)
  end
  stale = true
end
if yield == '1' and redis.call('EXISTS', gateKey) == 1 then
  return '0:0'
end
if ARGV[3] == '1' then
  local n = redis.pcall('GET', fenceKey)
  if type(n) == 'string' and (#n > 16 or #n == 16 and n >= '9007199254740991') then
    return redis.error_reply('BADCOUNTER fence counter ' .. fenceKey .. ' holds ' .. n ..
      ', too large for permit fences (counter times 1024 plus slot): below 2^53-1 needed')
  end
end
local taking = true -- permit_end.lua: the slot's script is acquire.lua, held when it answers a take
local function slot()
