-- Release the lock on one node, only if it holds a value of our Acquire call.
-- KEYS[1] lock key; ARGV[1] the call's prefix "<token>." (matches the value
-- of every attempt of the call, so a late grant of an earlier attempt goes
-- too); ARGV[2] channel to announce the release on, to wake waiters.
-- The waiting order (queue.go): KEYS[2] the queue and KEYS[3] its expiries,
-- by default KEYS[1] .. ':q' and ':qt' (same hash slot). The holder's own
-- entry ("<token>:<client>") leaves the queue, and the release is announced
-- to the queue's head (the only waiter the free key will go to): its entry,
-- on ARGV[2] .. ':' .. <client>; or "" on ARGV[2] when nobody queues.
-- Returns 1 when deleted, 0 when the key is gone or holds another owner's
-- value.
local q, qt = KEYS[2] or (KEYS[1] .. ':q'), KEYS[3] or (KEYS[1] .. ':qt')
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
-- GET answers for a string (a plain lock) or no key; any other type is not
-- ours.
local cur = redis.pcall('GET', KEYS[1])
if type(cur) ~= 'string' then
  return 0
end
if string.sub(cur, 1, #ARGV[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
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
    local sep = string.find(head, ':', 1, true)
    if sep then
      channel = channel .. ':' .. string.sub(head, sep + 1)
    end
  end
  redis.call('PUBLISH', channel, head)
  return 1
end
return 0
