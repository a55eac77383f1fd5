-- Read one node's state of a lock, changing nothing (inspect.go).
-- KEYS[1] lock key, KEYS[2] fence counter key.
-- Returns {kind, holder, meta, pttl, holds, counter}: kind "none", "plain"
-- (a string "<token>.<attempt>": holder the token), "reentrant" (a hash:
-- holder its owner, holds its number of holds) or the Redis type of a key
-- that is not a lock; pttl the key's PTTL (-2 absent, -1 no expiry);
-- counter the fence counter as a string, or "" when absent or not a string.
local t = redis.call('TYPE', KEYS[1])['ok']
local kind, holder, meta, holds = t, '', '', 0
if t == 'none' then
  kind = 'none'
elseif t == 'string' then
  local v = redis.call('GET', KEYS[1])
  local dot = string.find(v, '.', 1, true)
  kind, holder, holds = 'plain', dot and string.sub(v, 1, dot - 1) or v, 1
elseif t == 'hash' and redis.call('HEXISTS', KEYS[1], 'rl-owner') == 1 then
  kind = 'reentrant'
  holder = redis.call('HGET', KEYS[1], 'rl-owner')
  meta = redis.call('HGET', KEYS[1], 'rl-meta') or ''
  holds = math.max(redis.call('HLEN', KEYS[1]) - 4, 0)
end
local counter = ''
if redis.call('TYPE', KEYS[2])['ok'] == 'string' then
  counter = redis.call('GET', KEYS[2])
end
return {kind, holder, meta, redis.call('PTTL', KEYS[1]), holds, counter}
