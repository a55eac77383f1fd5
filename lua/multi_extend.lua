-- Extend a set of names on one node (multi.go), only if every key holds the
-- value the lease won: the node counts for the set only when it holds all
-- of it.
-- KEYS[1..k] the lock keys of the set's names; ARGV[1] the lease's value
-- "<token>.<w>", what the winning attempt w wrote (a set is never granted a
-- key by a release, so no "<token>.0"); ARGV[2] the TTL in ms.
-- As extend.lua: another value of the call (a failed attempt's) is not
-- counted, an expired key is never re-created, and an expiry only moves
-- later.
-- Returns 1 when every key holds ARGV[1] (and now lives at least ARGV[2]),
-- 0 otherwise, having written nothing.
for i = 1, #KEYS do
  if redis.pcall('GET', KEYS[i]) ~= ARGV[1] then
    return 0
  end
end
local ttl = tonumber(ARGV[2])
for i = 1, #KEYS do
  if redis.call('PTTL', KEYS[i]) < ttl then
    redis.call('PEXPIRE', KEYS[i], ARGV[2])
  end
end
return 1
