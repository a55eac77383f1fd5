-- The rest of multi_acquire.lua, after counter.lua and queue.lua
-- (scripts.go): every case but the common one.
-- useQueue points queue.lua's helpers at name i's queue (qexists[i]:
-- whether it exists, once queueTypes has checked it).
local qexists = {}
local function useQueue(i)
  if ARGV[4] ~= 'barge' then
    queueKey, queueTimesKey, queueExists = KEYS[i] .. ':q', KEYS[i] .. ':qt', qexists[i] or false
  end
end
-- The common case set keys 1..bad[1] and met a counter whose INCR did not
-- give a fence in [1, 2^53): fence answers it (an error sets the counter
-- back, and the keys set here go again; the counters INCRed before it keep
-- their increment, a gap fences allow); then the remaining keys, still free
-- (this script is atomic), are taken the same way.
if bad then
  for i = bad[1], k do
    if i > bad[1] then
      redis.call('SET', KEYS[i], v, 'PX', ARGV[2])
      incr = nil
    else
      incr = bad[2]
    end
    fenceKey = KEYS[i] .. ':fence'
    local f, err = fence()
    if not f then
      for j = 1, i do
        redis.call('DEL', KEYS[j])
      end
      return err
    end
    fences[i] = f
  end
  return '1:' .. table.concat(fences, ',')
end
-- Every check before any write: each lock key's type, each queue's, each
-- counter. A re-entrant lock's hash (another owner's) is a taken key.
local curs = {}
for i = 1, k do
  local cur = redis.pcall('GET', KEYS[i])
  if type(cur) == 'table' then
    local t = redis.call('TYPE', KEYS[i])['ok']
    if t ~= 'hash' or redis.call('HEXISTS', KEYS[i], 'rl-owner') == 0 then
      return redis.error_reply('WRONGTYPE lock key ' .. KEYS[i] .. ' holds a ' .. t .. ', not a lock')
    end
    cur = true
  end
  curs[i] = cur
  useQueue(i)
  local err = queueTypes()
  qexists[i] = queueExists
  if not err and fenced then
    fenceKey = KEYS[i] .. ':fence'
    err = badCounter()
  end
  if err then
    return err
  end
end
-- Is every name ours to take? A key holding an earlier attempt's value of
-- this call (a late success) is taken over, as acquire.lua does; never a
-- later attempt's, nor anyone else's.
local dot = string.find(v, '.', 1, true) or #v
local prefix, mine = string.sub(v, 1, dot), tonumber(string.sub(v, dot + 1))
local refused, pttl = false, 0
local held = {} -- the names another owner holds
for i = 1, k do
  local cur = curs[i]
  if cur == false then
    useQueue(i)
    if otherFirst() then
      refused = true
    end
  elseif cur ~= v then
    local theirs = cur ~= true and string.sub(cur, 1, #prefix) == prefix and tonumber(string.sub(cur, #prefix + 1))
    if not (theirs and mine and theirs < mine) then
      refused = true
      pttl = math.max(pttl, redis.call('PTTL', KEYS[i]))
      held[#held + 1] = i
    end
  end
end
if refused then
  if ARGV[4] ~= 'wait' then
    if ARGV[4] == 'barge' then
      -- Every check is behind us: the marks are the only writes.
      for _, i in ipairs(held) do
        markBarger(KEYS[i])
      end
    end
    return string.format('0:%.0f', pttl)
  end
  -- The call waits in every name's queue, with the one priority it has on
  -- every node: the waiter with the lowest priority is the head of every
  -- queue it is in, so it gets every name once their holders let go
  -- (docs/design.md, "Locks over several names").
  local rank = 0
  for i = 1, k do
    useQueue(i)
    queueExists = true
    purge()
    redis.call('ZADD', queueKey, ARGV[6], ARGV[5])
    redis.call('ZADD', queueTimesKey, now() + tonumber(ARGV[7]), ARGV[5])
    redis.call('PEXPIRE', queueKey, ARGV[7])
    redis.call('PEXPIRE', queueTimesKey, ARGV[7])
    rank = math.max(rank, redis.call('ZRANK', queueKey, ARGV[5]))
  end
  return string.format('0:%.0f:%.0f', pttl, rank)
end
-- Take every name: the fences first (the counters were checked), then the
-- keys, whose expiry only moves later (a key of this call may have been
-- extended past ARGV[2], as in acquire.lua).
for i = 1, k do
  fenceKey, incr = KEYS[i] .. ':fence', nil
  local f, err = fence()
  if not f then
    return err
  end
  fences[i] = f
end
for i = 1, k do
  local cur, px = curs[i], ARGV[2]
  if cur and redis.call('PTTL', KEYS[i]) > tonumber(px) then
    px = nil
  end
  if cur == v then
    if px then
      redis.call('PEXPIRE', KEYS[i], px)
    end
  elseif px then
    redis.call('SET', KEYS[i], v, 'PX', px)
  else
    redis.call('SET', KEYS[i], v, 'KEEPTTL')
  end
end
return '1:' .. table.concat(fences, ',')
