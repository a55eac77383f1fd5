-- Release the lock on one node, only if it holds a value of our Acquire call.
-- KEYS[1] lock key; ARGV[1] the call's prefix "<token>." (matches the value
-- of every attempt of the call, so a late grant of an earlier attempt goes
-- too); ARGV[2] channel to announce the release on, to wake waiters.
-- The waiting order (queue.go): KEYS[2] the queue and KEYS[3] its expiries,
-- by default KEYS[1] .. ':q' and ':qt' (same hash slot). The holder's own
-- entry ("<token>:<client>") leaves the queue, and the release is announced
-- to the queue's head (the only waiter the free key will go to): its entry,
-- on ARGV[2] .. ':' .. <client>; or "" on ARGV[2] when nobody queues.
-- A head that queued for a plain lock ("<token>:<client>:<ttl ms>:<f>", f
-- "1" fenced, "0" not) is granted the free key at once: the key is set to
-- "<token>.0" for its TTL, the fence counter KEYS[4] (by default KEYS[1] ..
-- ':fence') incremented when fenced, and the notice "<entry> <fence>"
-- published; if no connection of the head's Client listens on this node (its
-- process is gone), the grant is undone and nobody is woken. Any other head
-- gets the notice "<entry>" and takes the key with its next attempt.
-- A release that finds the key free (gone) hands it on to the head the same
-- way: only a key held by another owner (or of another type) stays as it is.
-- Returns 1 when deleted, 0 when the key is gone or holds another owner's
-- value.
local q, qt = KEYS[2] or (KEYS[1] .. ':q'), KEYS[3] or (KEYS[1] .. ':qt')
local fenceKey = KEYS[4] or (KEYS[1] .. ':fence')
local queue = redis.call('EXISTS', q, qt) == 2 and redis.call('TYPE', q)['ok'] == 'zset' and
  redis.call('TYPE', qt)['ok'] == 'zset'
if queue then
  local mine = ARGV[1]
  if string.sub(mine, -1) == '.' then
    mine = string.sub(mine, 1, -2)
  end
  mine = mine .. ':'
  -- The holder's entry is usually the head; else look for it.
  local h = redis.call('ZRANGE', q, 0, 0)[1]
  if h and string.sub(h, 1, #mine) == mine then
    redis.call('ZREM', q, h)
    redis.call('ZREM', qt, h)
  else
    local cursor = '0'
    repeat
      local r = redis.call('ZSCAN', q, cursor, 'MATCH', mine .. '*', 'COUNT', 100)
      cursor = r[1]
      for i = 1, #r[2], 2 do
        redis.call('ZREM', q, r[2][i])
        redis.call('ZREM', qt, r[2][i])
      end
    until cursor == '0'
  end
end
-- grantable: whether the free key may be granted to a head that asks for
-- fencing (fenced "1") or not: not over a fence counter that is not a
-- decimal in [0, 2^63-2] (the acquire script's check).
local function grantable(fenced)
  if fenced ~= '1' then
    return true
  end
  local c = redis.pcall('GET', fenceKey)
  if c == false then
    return true
  end
  if type(c) ~= 'string' or not (c == '0' or string.match(c, '^[1-9]%d*$')) or #c > 19 or
    (#c == 19 and c >= '9223372036854775807') then
    return false
  end
  return true
end
-- fence increments the counter and returns it as a decimal string, exact
-- (as in the acquire script).
local function fence()
  local n = redis.call('INCR', fenceKey)
  if n < 9007199254740992 then
    return string.format('%.0f', n)
  end
  return redis.call('GET', fenceKey)
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
if cur or queue then
  if cur then
    redis.call('DEL', KEYS[1])
  end
  local head, channel = '', ARGV[2]
  if queue then
    -- Name a live waiter: drop the entries that expired (dead waiters) first.
    local tm = redis.call('TIME')
    local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
    repeat
      local dead = redis.call('ZRANGEBYSCORE', qt, '-inf', now, 'LIMIT', 0, 100)
      if #dead > 0 then
        redis.call('ZREM', q, unpack(dead))
        redis.call('ZREM', qt, unpack(dead))
      end
    until #dead < 100
    head = redis.call('ZRANGE', q, 0, 0)[1] or ''
    local token, client, ttl, fenced = string.match(head, '^([^:]+):([^:]+):(%d+):([01])$')
    client = client or string.match(head, '^[^:]*:([^:]+)')
    if client then
      channel = channel .. ':' .. client
    end
    if token and grantable(fenced) then
      redis.call('SET', KEYS[1], token .. '.0', 'PX', ttl)
      local f = '0'
      if fenced == '1' then
        f = fence()
      end
      if redis.call('PUBLISH', channel, head .. ' ' .. f) == 0 then
        redis.call('DEL', KEYS[1])
      end
      return cur and 1 or 0
    end
  end
  if cur or head ~= '' then
    redis.call('PUBLISH', channel, head)
  end
  return cur and 1 or 0
end
return 0
