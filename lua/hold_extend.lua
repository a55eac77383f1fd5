-- Extend one hold of a re-entrant lock on one node, or first add it (a
-- nested acquire, a resume): reentry.go.
-- KEYS[1] lock key; ARGV[1] the owner's token; ARGV[2] the hold id; ARGV[3]
-- ttl in ms; ARGV[4] "1" to add the hold (idempotent: a resent request
-- finds it), "0" to extend a hold the node already has.
-- The key's TTL becomes the longest TTL any hold asked for (field rl-ttl): a
-- hold that asks for less never shortens the others' lease.
-- Returns 1 when done, 0 when the key is gone, is a plain lock, belongs to
-- another owner, or (extend) lacks this hold: this node does not keep the
-- key for this hold, so it must not count towards the hold's quorum. An
-- absent key is never re-created here.
if redis.call('TYPE', KEYS[1])['ok'] ~= 'hash' or redis.call('HGET', KEYS[1], 'rl-owner') ~= ARGV[1] then
  return 0
end
local hold = 'h:' .. ARGV[2]
if ARGV[4] == '1' then
  if redis.call('HEXISTS', KEYS[1], hold) == 0 then
    redis.call('HSET', KEYS[1], hold, '0')
  end
elseif redis.call('HEXISTS', KEYS[1], hold) == 0 then
  return 0
end
local ttl = math.max(tonumber(ARGV[3]), tonumber(redis.call('HGET', KEYS[1], 'rl-ttl')) or 0)
redis.call('HSET', KEYS[1], 'rl-ttl', ttl)
redis.call('PEXPIRE', KEYS[1], ttl)
return 1
