-- Acquire the lock on one node, for one attempt of one Acquire call.
-- KEYS[1] lock key, KEYS[2] fence counter key (same hash slot)
-- ARGV[1] this attempt's value, "<token>.<attempt>" (the token has no dot)
-- ARGV[2] ttl in ms
-- ARGV[3] "1" to increment the fence counter, "0" for no fencing
-- The waiting order (see queue.go), all in the lock's hash slot:
-- KEYS[3] the queue: zset of waiting calls' entries, scored by priority
-- KEYS[4] the queue's expiries: zset of the same entries, scored by node time
-- ARGV[4] "wait": a free key goes to the queue's head only (or anyone when
--         the queue is empty), and a refused caller takes or keeps its place;
--         "try": a free key goes to the caller only when the queue is empty,
--         and a refused caller is not queued; anything else: no queue (barge)
-- ARGV[5] the call's queue entry "<token>:<client>"; ARGV[6] its priority, a decimal
-- the client fixed for the call; ARGV[7] how long the entry lives, in ms
-- The re-entrant form (reentry.go), when ARGV[8] is given: the key is a hash
-- (fields rl-owner, rl-fence, rl-ttl, rl-meta and one "h:<hold id>" per
-- hold) instead of a string. ARGV[4] to ARGV[7] are then always given
-- (ARGV[4] "barge" to ignore the queue); ARGV[8] the holder's metadata. The call's own hold is
-- "h:<token>", holding the number of the attempt that wrote it, so that
-- attempts compare as string values do. A key of the other form is another
-- owner's: held, never an error, never taken over.
-- The plain form with metadata, when KEYS[5] is given (the meta key, same
-- slot): ARGV[4] to ARGV[7] are given as for the re-entrant form and ARGV[8]
-- is "<token>:<metadata>", which every write of the lock key stores in
-- KEYS[5] with the lock key's expiry (never longer: the lock key's expiry
-- only moves later, and every script that deletes the key deletes KEYS[5]).
-- Returns one bulk string: "1:<fence>" when the key now holds this
-- attempt's value (or the release's grant to the call, "<token>.0", which
-- stays), with fence the counter in decimal (exact past 2^53; "0" without
-- fencing); "0:<pttl>" when someone else holds the key (or a later attempt
-- of the same call: an attempt never takes a key back from a newer one), or
-- "0:0" when the key is free but another waiter comes first; in "wait" mode
-- ":<rank>" follows, the caller's rank in the queue (0: the head).
-- Every check comes before any write, so an error leaves every key untouched:
-- WRONGTYPE for a key of another type (or a hash without rl-owner),
-- BADCOUNTER for a counter that is not a decimal in [0, 2^63-2] (INCR would
-- fail or overflow). When the key is free and nobody queues (the key will be
-- taken), the INCR that takes the fence is the counter's check, before the
-- lock key is written: a counter INCR refuses, or takes below 1 (it is set
-- back at once), fails the call.
local metaKey = KEYS[5]
local hashed = ARGV[8] ~= nil and not metaKey
local mode = ARGV[4]
local queued = mode == 'wait' or mode == 'try'
-- The common case, in one call: the key is free and nobody queues.
local free
if queued then
  free = redis.call('EXISTS', KEYS[1], KEYS[3], KEYS[4]) == 0
else
  free = redis.call('EXISTS', KEYS[1]) == 0
end
local fenced = ARGV[3] == '1'
-- The common case first, before any helper is made: the plain form takes
-- the free key. Its INCR is the counter's check (as in fence, below): a
-- reply that is not a number in [1, 2^53) is left in incr for fence to
-- answer, and the key is not written.
local incr
if free and not hashed then
  local f = '0'
  if fenced then
    incr = redis.pcall('INCR', KEYS[2])
    if type(incr) == 'number' and incr >= 1 and incr < 9007199254740992 then
      f, incr = string.format('%.0f', incr), nil
    end
  end
  if incr == nil then
    redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
    if metaKey then
      redis.call('SET', metaKey, ARGV[8], 'PX', ARGV[2])
    end
    return '1:' .. f
  end
end
-- badCounter returns the error for a fence counter that INCR would refuse
-- or take below 1, or false.
local function badCounter()
  local c = redis.pcall('GET', KEYS[2])
  if type(c) == 'table' then
    return redis.error_reply('WRONGTYPE fence counter key ' .. KEYS[2] .. ' holds a ' ..
      redis.call('TYPE', KEYS[2])['ok'] .. ', not a counter')
  end
  if c ~= false then
    local decimal = c == '0' or string.match(c, '^[1-9]%d*$')
    if not decimal or #c > 19 or (#c == 19 and c >= '9223372036854775807') then
      return redis.error_reply('BADCOUNTER fence counter ' .. KEYS[2] .. ' holds "' .. string.sub(c, 1, 32) ..
        '", not a decimal counter below 2^63-1')
    end
  end
  return false
end
-- fence increments the counter (or takes the common case's INCR reply,
-- incr) and returns it as a decimal string, exact: INCR's reply passes
-- through a Lua number, exact below 2^53; above, the counter is read back
-- as a string. A counter INCR refuses, or takes below 1 (set back at once),
-- returns false and the error reply instead.
local function fence()
  if not fenced then
    return '0'
  end
  local n = incr or redis.pcall('INCR', KEYS[2])
  if type(n) == 'table' or n < 1 then
    if type(n) == 'number' then
      -- Set it back with the commands a lock user may call (no DECR): one
      -- less, in decimal, exact whatever its size, and its TTL if it had one.
      local m = redis.call('GET', KEYS[2]) -- "0" or "-<digits>"
      local back = '-1'
      if m ~= '0' then
        local k = string.sub(m, 2)
        local i = #k
        while i > 0 and string.sub(k, i, i) == '9' do
          i = i - 1
        end
        local head = '1'
        if i > 0 then
          head = string.sub(k, 1, i - 1) .. string.char(string.byte(k, i) + 1)
        end
        back = '-' .. head .. string.rep('0', #k - i)
      end
      local ttl = redis.call('PTTL', KEYS[2])
      redis.call('SET', KEYS[2], back)
      if ttl > 0 then
        redis.call('PEXPIRE', KEYS[2], ttl)
      end
    end
    return false, badCounter() or n
  end
  if n < 9007199254740992 then
    return string.format('%.0f', n)
  end
  return redis.call('GET', KEYS[2])
end
-- The common case whose INCR was refused, or above 2^53: fence answers it.
if free and not hashed then
  local f, err = fence()
  if not f then
    return err
  end
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  if metaKey then
    redis.call('SET', metaKey, ARGV[8], 'PX', ARGV[2])
  end
  return '1:' .. f
end
local t, cur = 'none', false
local queueExists = false
if not free then
  -- The lock key: a plain GET answers for a string or no key (one call);
  -- TYPE only when it is not a string, or for the hash form.
  if hashed then
    t = redis.call('TYPE', KEYS[1])['ok']
  else
    cur = redis.pcall('GET', KEYS[1])
    if type(cur) == 'table' then
      t, cur = redis.call('TYPE', KEYS[1])['ok'], nil
    else
      t = cur and 'string' or 'none'
    end
  end
  if t == 'hash' and redis.call('HEXISTS', KEYS[1], 'rl-owner') == 0 or t ~= 'none' and t ~= 'string' and t ~= 'hash' then
    return redis.error_reply('WRONGTYPE lock key ' .. KEYS[1] .. ' holds a ' .. t .. ', not a lock')
  end
  -- The queue keys, when one exists.
  if queued and redis.call('EXISTS', KEYS[3], KEYS[4]) > 0 then
    for i = 3, 4 do
      local qt = redis.call('TYPE', KEYS[i])['ok']
      if qt ~= 'none' and qt ~= 'zset' then
        return redis.error_reply('WRONGTYPE queue key ' .. KEYS[i] .. ' holds a ' .. qt .. ', not a queue')
      end
      queueExists = queueExists or i == 3 and qt == 'zset'
    end
  end
end
-- The counter is checked now, unless the key is free and nobody queues:
-- then fence checks it, first thing.
if fenced and not free then
  local err = badCounter()
  if err then
    return err
  end
end
-- now: node time in ms, read once. purge drops the expired entries (dead
-- waiters); head purges and returns the queue's head, or false when nobody
-- waits.
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
    local dead = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now(), 'LIMIT', 0, 100)
    if #dead > 0 then
      redis.call('ZREM', KEYS[3], unpack(dead))
      redis.call('ZREM', KEYS[4], unpack(dead))
    end
  until #dead < 100
end
local function head()
  if not queueExists then
    return false
  end
  purge()
  return redis.call('ZRANGE', KEYS[3], 0, 0)[1] or false
end
-- refuse answers a refused caller, after taking or keeping its place in
-- "wait" mode (its priority stays the one the client fixed for the call).
local function refuse(pttl)
  if mode ~= 'wait' then
    return string.format('0:%.0f', pttl)
  end
  purge()
  redis.call('ZADD', KEYS[3], ARGV[6], ARGV[5])
  queueExists = true
  redis.call('ZADD', KEYS[4], now() + tonumber(ARGV[7]), ARGV[5])
  -- Every entry expires within ARGV[7] of its last refresh, so the queue
  -- keys can too: a queue nobody looks at again leaves nothing behind.
  redis.call('PEXPIRE', KEYS[3], ARGV[7])
  redis.call('PEXPIRE', KEYS[4], ARGV[7])
  return string.format('0:%.0f:%.0f', pttl, redis.call('ZRANK', KEYS[3], ARGV[5]))
end
-- otherFirst reports whether a free key goes to another waiter first: the
-- queue's head, when the call queues and is not the head itself.
local function otherFirst()
  if not queued then
    return false
  end
  local h = head()
  return h and h ~= ARGV[5]
end
local v = ARGV[1]
if hashed or t == 'hash' then
  -- The re-entrant form, or a plain acquire that meets it (not ours).
  if not hashed or t == 'string' then
    return refuse(redis.call('PTTL', KEYS[1]))
  end
  local dot = string.find(v, '.', 1, true)
  local token, mine = string.sub(v, 1, dot - 1), tonumber(string.sub(v, dot + 1))
  local hold = 'h:' .. token
  local ttl = ARGV[2]
  if t == 'none' then
    if otherFirst() then
      return refuse(0)
    end
    local f, err = fence()
    if not f then
      return err
    end
    redis.call('HSET', KEYS[1], 'rl-owner', token, 'rl-fence', f, 'rl-ttl', ttl, 'rl-meta', ARGV[8], hold, mine)
    redis.call('PEXPIRE', KEYS[1], ttl)
    return '1:' .. f
  end
  -- Ours only from an earlier attempt of the same call, as for a string.
  local theirs = redis.call('HGET', KEYS[1], 'rl-owner') == token and tonumber(redis.call('HGET', KEYS[1], hold))
  if not (theirs and mine and theirs <= mine) then
    return refuse(redis.call('PTTL', KEYS[1]))
  end
  local f, err = fence()
  if not f then
    return err
  end
  ttl = math.max(tonumber(ttl), tonumber(redis.call('HGET', KEYS[1], 'rl-ttl')) or 0)
  if fenced then
    redis.call('HSET', KEYS[1], hold, mine, 'rl-ttl', ttl, 'rl-fence', f)
  else
    redis.call('HSET', KEYS[1], hold, mine, 'rl-ttl', ttl)
  end
  redis.call('PEXPIRE', KEYS[1], ttl)
  return '1:' .. f
end
local keep = false -- the key is the release's grant to this call: kept
if cur == false then
  if otherFirst() then
    return refuse(0)
  end
elseif cur ~= v then
  -- An earlier attempt of the same call (same token) may hold the key: a
  -- late grant. Take it over; never the other way round, or a delayed
  -- request of an old attempt could hand the key back to a value whose
  -- cleanup is on its way.
  -- A release's grant to this call ("<token>.0", release.lua) is kept as
  -- it is, refreshed: the call may count it from the grant's notice while
  -- this attempt fails, and a failed attempt's cleanup deletes only its own
  -- value.
  local dot = string.find(v, '.', 1, true) or #v
  local prefix = string.sub(v, 1, dot)
  local mine = tonumber(string.sub(v, dot + 1))
  local theirs = string.sub(cur, 1, #prefix) == prefix and tonumber(string.sub(cur, #prefix + 1))
  keep = theirs == 0 and cur == prefix .. '0'
  if not (keep or theirs and mine and theirs < mine) then
    return refuse(redis.call('PTTL', KEYS[1]))
  end
end
local f, err = fence()
if not f then
  return err
end
-- The key already holds a value of the call, which its lock may have
-- extended past ARGV[2]: the expiry only moves later (extend.lua).
local px = ARGV[2]
if cur and redis.call('PTTL', KEYS[1]) > tonumber(px) then
  px = nil
end
if cur == v or keep then
  -- This very attempt, resent after a lost reply, or the call's grant:
  -- refresh and succeed.
  if px then
    redis.call('PEXPIRE', KEYS[1], px)
  end
elseif px then
  redis.call('SET', KEYS[1], v, 'PX', px)
else
  redis.call('SET', KEYS[1], v, 'KEEPTTL')
end
if metaKey then
  local pttl = redis.call('PTTL', KEYS[1])
  if pttl > 0 then
    redis.call('SET', metaKey, ARGV[8], 'PX', pttl)
  end
end
return '1:' .. f
