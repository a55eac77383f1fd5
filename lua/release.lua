-- Release the lock on one node, only if it holds a value of our Acquire call.
-- KEYS[1] lock key; ARGV[1] the call's prefix "<token>." (matches the value
-- of every attempt of the call, so a late grant of an earlier attempt goes
-- too); ARGV[2] channel to announce the release on, to wake waiters.
-- The waiting order (queue.go): KEYS[2] the queue and KEYS[3] its expiries,
-- by default KEYS[1] .. ':q' and ':qt' (same hash slot). The holder's own
-- entry ("<token>:<client>") leaves the queue, and the release is announced
-- to the queue's head (the only waiter the free key will go to): its entry,
-- on ARGV[2] .. ':' .. <client>; or "" on ARGV[2] when nobody queues.
-- A head that queued for a plain lock is granted the free key at once, with
-- the fence counter KEYS[4] (by default KEYS[1] .. ':fence'): see handOn
-- (handon.lua, which this script starts with).
-- KEYS[5] the lock's meta key (by default KEYS[1] .. ':meta'), deleted with
-- the lock key in one DEL (a free key's meta key expired with it).
-- A release that finds the key free (gone) hands it on to the head the same
-- way: only a key held by another owner (or of another type) stays as it is.
-- Returns 1 when deleted, 0 when the key is gone or holds another owner's
-- value.
local q, qt = KEYS[2] or (KEYS[1] .. ':q'), KEYS[3] or (KEYS[1] .. ':qt')
local fenceKey = KEYS[4] or (KEYS[1] .. ':fence')
local queue = isQueue(q, qt)
local nextHead -- the head once the holder's entry left, if read here (false: nobody)
if queue then
  dropDead(q, qt)
  local mine = ARGV[1]
  if string.sub(mine, -1) == '.' then
    mine = string.sub(mine, 1, -2)
  end
  mine = mine .. ':'
  -- The holder's entry is usually the head, and the next one the new head;
  -- else look for it.
  local hs = redis.call('ZRANGE', q, 0, 1)
  if hs[1] and string.sub(hs[1], 1, #mine) == mine then
    redis.call('ZREM', q, hs[1])
    redis.call('ZREM', qt, hs[1])
    nextHead = hs[2] or false
  else
    dropEntries(q, qt, mine)
  end
end
-- GET answers for a string (a plain lock) or no key; any other type is not
-- ours.
local cur = redis.pcall('GET', KEYS[1])
if type(cur) == 'table' or cur and string.sub(cur, 1, #ARGV[1]) ~= ARGV[1] then
  return 0
end
-- The key is ours, or free: no attempt of the call holds it here (a failed
-- attempt's cleanup deleted it, or it expired), and the call's entry may
-- have been the head that the free key waited for. Either way the key is
-- handed on to the queue's head as the release of a held key does: nobody
-- else would tell the new head, which would wait for its next poll.
if cur then
  redis.call('DEL', KEYS[1], KEYS[5] or (KEYS[1] .. ':meta'))
end
local head = ''
if queue then
  head = handOn(KEYS[1], q, qt, fenceKey, ARGV[2], nextHead)
end
if cur and head == '' then
  redis.call('PUBLISH', ARGV[2], '')
end
return cur and 1 or 0
