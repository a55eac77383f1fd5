-- Extend one hold of a re-entrant lock on one node, or first add it (a
-- nested acquire, a resume): reentry.go.
-- KEYS[1] lock key; ARGV[1] the owner's token; ARGV[2] the hold id; ARGV[3]
-- ttl in ms; ARGV[4] "1" to add the hold (idempotent: a resent request
-- finds it), "0" to extend a hold the node already has; ARGV[5] the hold's
-- value that the lease counts (lease.counted): the winning attempt's number
-- for the Acquire call's own hold, "0" for a hold added here.
-- The key's TTL becomes the longest TTL any hold asked for (field rl-ttl): a
-- hold that asks for less never shortens the others' lease.
-- Returns 1 when done, 0 when the key is gone, is a plain lock, belongs to
-- another owner, or (extend) lacks this hold with the value ARGV[5]: a hold
-- written by a failed attempt of the call (a delayed acquire that landed
-- late) is not the lease's, and that attempt's exact cleanup may remove it
-- at any time, so this node must not count towards the hold's quorum. An
-- absent key is never re-created here.
if redis.call('TYPE', KEYS[1])['ok'] ~= 'hash' or redis.call('HGET', KEYS[1], 'rl-owner') ~= ARGV[1] then
  return 0
end
local hold = 'h:' .. ARGV[2]
if ARGV[4] == '1' then
  if redis.call('HEXISTS', KEYS[1], hold) == 0 then
    redis.call('HSET', KEYS[1], hold, ARGV[5])
  end
elseif redis.call('HGET', KEYS[1], hold) ~= ARGV[5] then
  return 0
end
local ttl = math.max(tonumber(ARGV[3]), tonumber(redis.call('HGET', KEYS[1], 'rl-ttl')) or 0)
redis.call('HSET', KEYS[1], 'rl-ttl', ttl)
redis.call('PEXPIRE', KEYS[1], ttl)
return 1
