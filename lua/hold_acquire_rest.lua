-- The rest of hold_acquire.lua, after counter.lua and queue.lua.
local t = redis.call('TYPE', KEYS[1])['ok']
if t == 'hash' and redis.call('HEXISTS', KEYS[1], 'rl-owner') == 0 or t ~= 'none' and t ~= 'string' and t ~= 'hash' then
  return redis.error_reply('WRONGTYPE lock key ' .. KEYS[1] .. ' holds a ' .. t .. ', not a lock')
end
local err = queueTypes()
if err then
  return err
end
if fenced and t ~= 'none' then
  err = badCounter()
  if err then
    return err
  end
end
if t == 'string' then
  -- A plain lock (acquire.lua): another owner's.
  return refuse(redis.call('PTTL', KEYS[1]))
end
local v = ARGV[1]
local dot = string.find(v, '.', 1, true)
local token, mine = string.sub(v, 1, dot - 1), tonumber(string.sub(v, dot + 1))
local hold = 'h:' .. token
local ttl = ARGV[2]
local f
if t == 'none' then
  if otherFirst() then
    return refuse(0)
  end
  f, err = fence()
  if not f then
    return err
  end
  redis.call('HSET', KEYS[1], 'rl-owner', token, 'rl-fence', f, 'rl-ttl', ttl, 'rl-meta', meta, hold, mine)
  redis.call('PEXPIRE', KEYS[1], ttl)
  return '1:' .. f
end
-- Ours only from an earlier attempt of the same call, as for a string.
local theirs = redis.call('HGET', KEYS[1], 'rl-owner') == token and tonumber(redis.call('HGET', KEYS[1], hold))
if not (theirs and mine and theirs <= mine) then
  return refuse(redis.call('PTTL', KEYS[1]))
end
f, err = fence()
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
