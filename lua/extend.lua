-- Extend the lock on one node, only if it holds a value of our Acquire call.
-- KEYS[1] lock key; ARGV[1] the call's prefix "<token>." (matches the value
-- of every attempt of the call); ARGV[2] ttl in ms. KEYS[2], given by a lock
-- with metadata: its meta key, extended with the lock key to the same expiry
-- (never re-created).
-- The key's expiry only ever moves later: a lease may have several shares
-- (a resumed handle, the sender's watchdog), and one share asking for less
-- must not cut short another's local deadline. A key that lives at least
-- ARGV[2] more already is left as it is.
-- Returns 1 when extended (or already living long enough), 0 when the key is
-- gone or holds another owner's value. An expired key is never re-created
-- here: that would hide the gap.
if redis.call('TYPE', KEYS[1])['ok'] ~= 'string' then
  return 0
end
local cur = redis.call('GET', KEYS[1])
if string.sub(cur, 1, #ARGV[1]) ~= ARGV[1] then
  return 0
end
local pttl = redis.call('PTTL', KEYS[1])
if pttl >= tonumber(ARGV[2]) then
  return 1
end
if KEYS[2] then
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
end
return redis.call('PEXPIRE', KEYS[1], ARGV[2])
