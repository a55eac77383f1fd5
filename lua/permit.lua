-- Take one slot of a semaphore (permit.go) on one node: the start of a
-- script that goes on with acquire.lua, as the body of slot(), and ends
-- with permit_end.lua (scripts.go). A slot is a lock key of its own; this
-- part checks what the semaphore adds, then acquire.lua takes the slot as
-- it takes a lock.
-- KEYS: acquire.lua's KEYS for the slot (its lock key, the semaphore's
-- fence counter; the slot's queue keys, never used, and meta key when the
-- permit has metadata), then KEYS[#KEYS-1] the semaphore's gate, the lock
-- its waiters queue for, and KEYS[#KEYS] its limit key.
-- ARGV: acquire.lua's ARGV, then ARGV[#ARGV-1] the limit, a decimal, and
-- ARGV[#ARGV] "1" when the caller yields to a waiter holding the gate, "0"
-- for the gate's holder itself.
-- Both trailing keys and arguments are taken off KEYS and ARGV here, so
-- that acquire.lua finds its own layout.
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
local limitKey, gateKey = table.remove(KEYS), table.remove(KEYS)
local yield, limit = table.remove(ARGV), table.remove(ARGV)
local stale = false -- the limit key holds a record no live slot backs
local had = redis.call('GET', limitKey)
if had and had ~= limit then
  local base = string.sub(limitKey, 1, #limitKey - #':permits:limit') .. ':permit:'
  local slots = {}
  for i = 0, math.min(math.floor(tonumber(had) or 0), 1024) - 1 do
    slots[#slots + 1] = base .. i
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
  local n = redis.pcall('GET', KEYS[2])
  if type(n) == 'string' and (#n > 16 or #n == 16 and n >= '9007199254740991') then
    return redis.error_reply('BADCOUNTER fence counter ' .. KEYS[2] .. ' holds ' .. n ..
      ', too large for permit fences (counter times 1024 plus slot): below 2^53-1 needed')
  end
end
local function slot()
