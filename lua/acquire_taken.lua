-- The rest of acquire.lua, after counter.lua and queue.lua (scripts.go):
-- every case but the common one.
-- The common case took the key but the counter's INCR did not give a fence
-- in [1, 2^53): fence answers it, and the key goes again if it refused.
if took then
  local f, err = fence()
  if not f then
    redis.call('DEL', KEYS[1])
    return err
  end
  if metaKey then
    redis.call('SET', metaKey, metaText, 'PX', tonumber(ARGV[2]) - 1) -- (as acquire.lua)
  end
  return '1:' .. f
end
-- The lock key: a plain GET answers for a string or no key (one call);
-- TYPE only when it is not a string.
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
local err = queueTypes()
if err then
  return err
end
-- The counter is checked before anything is written.
if fenced then
  err = badCounter()
  if err then
    return err
  end
end
if t == 'hash' then
  -- A re-entrant lock (acquire_hold.lua): another owner's, never taken over.
  return refuse(redis.call('PTTL', KEYS[1]))
end
local v = ARGV[1]
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
local f
f, err = fence()
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
  -- A ms shorter than what the lock key has left: the clock may tick
  -- between the PTTL and the SET, and the meta key never outlives it.
  local pttl = redis.call('PTTL', KEYS[1])
  if pttl > 1 then
    redis.call('SET', metaKey, metaText, 'PX', pttl - 1)
  end
end
return '1:' .. f
