-- The waiting order's helpers, a fragment of the acquire scripts
-- (acquire.lua's cases past the common one, acquire_hold.lua), not a script
-- of its own. It expects queueKey and queueTimesKey (nil for a call that
-- barges), queueExists (whether the queue keys exist, known once they were
-- checked) and the call's entry in ARGV[5], its priority in ARGV[6] and how
-- long it lives in ARGV[7] ("wait" mode, ARGV[4]).
-- now returns the node time in ms, read once. purge drops the expired
-- entries (dead waiters); head purges and returns the queue's head, or
-- false when nobody waits.
local nowMs
local function now()
  if not nowMs then
    local tm = redis.call('TIME')
    nowMs = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
  end
  return nowMs
end
local function purge()
  if not queueExists then
    return
  end
  repeat
    local dead = redis.call('ZRANGEBYSCORE', queueTimesKey, '-inf', now(), 'LIMIT', 0, 100)
    if #dead > 0 then
      redis.call('ZREM', queueKey, unpack(dead))
      redis.call('ZREM', queueTimesKey, unpack(dead))
    end
  until #dead < 100
end
local function head()
  if not queueExists then
    return false
  end
  purge()
  return redis.call('ZRANGE', queueKey, 0, 0)[1] or false
end
-- markBarger marks lockKey as waited for by a barging caller, unless the
-- script's prelude says its form needs no mark (bargeMark: a slot's
-- release is announced while its gate is held): the key lockKey .. ':b'
-- lives a second after each refusal (as a queue entry after each refresh,
-- queueTTL; the default retry tries again well within it; mark.lua gives
-- an election's observer's mark the same life), and while it lives the
-- lock's release announces itself though nobody queues (release.lua): the
-- only notice a barging waiter gets. A release nobody waits for announces
-- nothing.
local function markBarger(lockKey)
  if bargeMark then
    redis.call('SET', lockKey .. ':b', '1', 'PX', 1000)
  end
end
-- refuse answers a refused caller, after taking or keeping its place in
-- "wait" mode (its priority stays the one the client fixed for the call),
-- or marking the key for a barging one.
local function refuse(pttl)
  if ARGV[4] ~= 'wait' then
    if ARGV[4] == 'barge' then
      markBarger(KEYS[1])
    end
    return string.format('0:%.0f', pttl)
  end
  purge()
  redis.call('ZADD', queueKey, ARGV[6], ARGV[5])
  queueExists = true
  redis.call('ZADD', queueTimesKey, now() + tonumber(ARGV[7]), ARGV[5])
  -- Every entry expires within ARGV[7] of its last refresh, so the queue
  -- keys can too: a queue nobody looks at again leaves nothing behind.
  redis.call('PEXPIRE', queueKey, ARGV[7])
  redis.call('PEXPIRE', queueTimesKey, ARGV[7])
  return string.format('0:%.0f:%.0f', pttl, redis.call('ZRANK', queueKey, ARGV[5]))
end
-- otherFirst reports whether a free key goes to another waiter first: the
-- queue's head, when the call queues and is not the head itself.
local function otherFirst()
  if not queueKey then
    return false
  end
  local h = head()
  return h and h ~= ARGV[5]
end
-- queueTypes returns the error for queue keys of another type than a
-- sorted set, or false; it notes whether the queue exists.
local function queueTypes()
  if not queueKey or redis.call('EXISTS', queueKey, queueTimesKey) == 0 then
    return false
  end
  for _, k in ipairs({queueKey, queueTimesKey}) do
    local qt = redis.call('TYPE', k)['ok']
    if qt ~= 'none' and qt ~= 'zset' then
      return redis.error_reply('WRONGTYPE queue key ' .. k .. ' holds a ' .. qt .. ', not a queue')
    end
    queueExists = queueExists or k == queueKey and qt == 'zset'
  end
  return false
end
