-- Extend one reader's lease of a read-write lock (rw.go) on one node: only
-- if the reader set KEYS[1] .. ':r' holds the value the lease won, ARGV[1]
-- ("<token>.<n>", see rw_shared_acquire.lua), unexpired, under the marker.
-- ARGV[2] the TTL in ms.
-- The reader's expiry (its score) becomes at least now + ARGV[2], and the
-- marker's and the set's at least that far: nothing here makes any expiry
-- earlier, so one reader's extend never shortens another's lease, nor
-- another share of its own (the never-shorten rule, per holder).
-- Another value of the call (a failed attempt's, which its exact cleanup
-- may delete at any time) does not count (docs/design.md, "What a lease
-- counts"); an expired reader is never brought back (that would hide the
-- gap).
-- Returns 1 when extended (or already living long enough), 0 otherwise.
local readersKey = KEYS[1] .. ':r'
if redis.pcall('GET', KEYS[1]) ~= 'rl-readers' then
  return 0 -- no marker: no reader holds here (or a key of another type)
end
local rank = redis.pcall('ZRANK', readersKey, ARGV[1])
if type(rank) ~= 'number' then
  return 0
end
local tm = redis.call('TIME')
local ms = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
local score = tonumber(redis.call('ZRANGE', readersKey, rank, rank, 'WITHSCORES')[2])
if score <= ms then
  return 0
end
local ttl = tonumber(ARGV[2])
if score < ms + ttl then
  redis.call('ZADD', readersKey, ms + ttl, ARGV[1])
end
if redis.call('PTTL', KEYS[1]) < ttl then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
if redis.call('PTTL', readersKey) < ttl then
  redis.call('PEXPIRE', readersKey, ttl)
  -- The readers' metadata (rw_shared_acquire.lua) expires with the set.
  if redis.call('EXISTS', KEYS[1] .. ':rm') == 1 then
    redis.call('PEXPIRE', KEYS[1] .. ':rm', ttl)
  end
end
return 1
