-- Acquire (or re-acquire) the lock on one node.
-- KEYS[1] lock key, KEYS[2] fence counter key (same hash slot)
-- ARGV[1] token, ARGV[2] ttl in ms, ARGV[3] "1" to increment the fence counter
-- Returns {1, fence} when the key now holds our token (fence is 0 when
-- fencing is off), {0, pttl} when another token holds it.
-- Checks come first so that an error leaves both keys untouched.
local t = redis.call('TYPE', KEYS[1])['ok']
if t ~= 'none' and t ~= 'string' then
  return redis.error_reply('WRONGTYPE lock key ' .. KEYS[1] .. ' holds a ' .. t .. ', not a lock')
end
if ARGV[3] == '1' then
  local ct = redis.call('TYPE', KEYS[2])['ok']
  if ct ~= 'none' and ct ~= 'string' then
    return redis.error_reply('WRONGTYPE fence counter key ' .. KEYS[2] .. ' holds a ' .. ct .. ', not a counter')
  end
end
local cur = redis.call('GET', KEYS[1])
if cur == false then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
elseif cur == ARGV[1] then
  -- Our own token: a retry after a lost reply. Refresh and succeed.
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
else
  return {0, redis.call('PTTL', KEYS[1])}
end
if ARGV[3] == '1' then
  return {1, redis.call('INCR', KEYS[2])}
end
return {1, 0}
