-- The rest of rw_shared_acquire.lua, after counter.lua and queue.lua
-- (scripts.go): every case but the common one.
-- The common case took the free key but the counter's INCR did not give a
-- fence in [1, 2^53): fence answers it, and the reader goes again if it
-- refused (the set held only this reader: it was written afresh).
if took then
  local f, err = fence()
  if not f then
    redis.call('DEL', KEYS[1], metaKey)
    redis.call('ZREM', readersKey, ARGV[1])
    return err
  end
  return '1:' .. f
end
-- Every check before any write: the lock key (a plain GET answers for a
-- string or no key), the reader set, the queue, the counter.
local t
local cur = redis.pcall('GET', KEYS[1])
if type(cur) == 'table' then
  t, cur = redis.call('TYPE', KEYS[1])['ok'], nil
else
  t = cur and 'string' or 'none'
end
if t == 'hash' and redis.call('HEXISTS', KEYS[1], 'rl-owner') == 0 or t ~= 'none' and t ~= 'string' and t ~= 'hash' then
  return redis.error_reply('WRONGTYPE lock key ' .. KEYS[1] .. ' holds a ' .. t .. ', not a lock')
end
local rt = redis.call('TYPE', readersKey)['ok']
if rt ~= 'none' and rt ~= 'zset' then
  return redis.error_reply('WRONGTYPE readers key ' .. readersKey .. ' holds a ' .. rt .. ', not a sorted set')
end
rt = redis.call('TYPE', metaKey)['ok']
if rt ~= 'none' and rt ~= 'hash' then
  return redis.error_reply('WRONGTYPE readers\' metadata key ' .. metaKey .. ' holds a ' .. rt .. ', not a hash')
end
local err = queueTypes()
if err then
  return err
end
if fenced then
  err = badCounter()
  if err then
    return err
  end
end
if t == 'hash' or cur and cur ~= marker then
  -- A writer holds the key (plain, with metadata or re-entrant).
  return refuse(redis.call('PTTL', KEYS[1]))
end
-- writerFirst reports whether a writer's entry comes before the caller's in
-- the queue (the whole queue when the caller has no entry there yet, or
-- tries), reading it in order from the head.
local function writerFirst()
  if not queueKey or not queueExists then
    return false
  end
  purge()
  local from = 0
  repeat
    local batch = redis.call('ZRANGE', queueKey, from, from + 99)
    for _, e in ipairs(batch) do
      if e == ARGV[5] and ARGV[4] == 'wait' then
        return false
      end
      if string.sub(e, -2) ~= ':s' then
        return true
      end
    end
    from = from + 100
  until #batch < 100
  return false
end
if writerFirst() then
  return refuse(cur and redis.call('PTTL', KEYS[1]) or 0)
end
local f
f, err = fence()
if not f then
  return err
end
-- The readers that expired go (their leases are over); this reader's
-- expiry is its own: a resent attempt's only moves later.
local ms = now()
repeat
  local dead = redis.call('ZRANGEBYSCORE', readersKey, '-inf', ms, 'LIMIT', 0, 100)
  if #dead > 0 then
    redis.call('ZREM', readersKey, unpack(dead))
    redis.call('HDEL', metaKey, unpack(dead))
  end
until #dead < 100
local ttl = tonumber(ARGV[2])
local exp = ms + ttl
local rank = redis.call('ZRANK', readersKey, ARGV[1])
if rank then
  exp = math.max(exp, tonumber(redis.call('ZRANGE', readersKey, rank, rank, 'WITHSCORES')[2]))
end
redis.call('ZADD', readersKey, exp, ARGV[1])
-- The marker and the set live until the last reader's expiry: never
-- shortened here.
local px = ttl
if cur then
  px = math.max(px, redis.call('PTTL', KEYS[1]))
  redis.call('PEXPIRE', KEYS[1], px)
else
  redis.call('SET', KEYS[1], marker, 'PX', px)
end
redis.call('PEXPIRE', readersKey, px)
if meta ~= '' then
  redis.call('HSET', metaKey, ARGV[1], meta)
end
if redis.call('EXISTS', metaKey) == 1 then
  redis.call('PEXPIRE', metaKey, px)
end
-- A queued reader leaves the queue once it reads; when it was the head, the
-- next entry is told if it is a reader too, so the readers queued together
-- come in one after the other without waiting for their next poll.
if queueExists and ARGV[4] == 'wait' then
  local wasHead = redis.call('ZRANK', queueKey, ARGV[5]) == 0
  redis.call('ZREM', queueKey, ARGV[5])
  redis.call('ZREM', queueTimesKey, ARGV[5])
  local nxt = wasHead and redis.call('ZRANGE', queueKey, 0, 0)[1]
  if nxt and string.sub(nxt, -2) == ':s' then
    local client = string.match(nxt, '^[^:]*:([^:]+)')
    redis.call('PUBLISH', string.match(KEYS[1], '^(.-){') .. 'released:' .. KEYS[1] .. ':' .. client, nxt)
  end
end
return '1:' .. f
