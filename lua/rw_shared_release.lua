-- Release or clean up a reader of a read-write lock (rw.go) on one node.
-- The script is handon.lua, then this file (scripts.go).
-- KEYS[1] the lock key; the reader set is KEYS[1] .. ':r', the queue
-- KEYS[1] .. ':q' and ':qt', the fence counter KEYS[1] .. ':fence'.
-- ARGV[1] and ARGV[2]: "<token>." and "release", the release of a reader's
-- lease, which takes every value of the call out of the set (a late grant
-- cannot exist: readers are never granted, but a late attempt's value may
-- have landed); or "<token>.<n>" and "cleanup", one failed attempt's exact
-- value, so that a delayed cleanup never takes out the value a lease won
-- (docs/design.md, "What a lease counts").
-- Only the caller's values go (and, for a release, the call's queue
-- entries, "<token>:..."). When readers are left, the marker and the set
-- live until the last one's expiry: that may shorten the marker, never a
-- reader's lease, which is its own score. When none is left, the marker and
-- the set go, and the free key is handed on to the queue's head as
-- release.lua does (handOn: a writer at the head is granted it; a reader is
-- told). A key held by a writer is never touched.
-- Returns 1 when a value went, 0 otherwise.
local marker = 'rl-readers'
local readersKey = KEYS[1] .. ':r'
local metaKey = KEYS[1] .. ':rm' -- the readers' metadata, field by member
local q, qt = KEYS[1] .. ':q', KEYS[1] .. ':qt'
local queued = redis.call('EXISTS', q) == 1 and isQueue(q, qt)
-- A release takes the call's entries out of the queue too: a reader that
-- won on a quorum may have queued on the other nodes, and its entry there
-- would keep a writer waiting behind it until it expired.
if queued and ARGV[2] ~= 'cleanup' then
  dropEntries(q, qt, string.sub(ARGV[1], 1, -2) .. ':')
end
if redis.call('TYPE', readersKey)['ok'] ~= 'zset' then
  if queued and redis.call('EXISTS', KEYS[1]) == 0 then
    handOn(KEYS[1], q, qt, KEYS[1] .. ':fence', string.match(KEYS[1], '^(.-){') .. 'released:' .. KEYS[1])
  end
  return 0
end
local n = 0
if ARGV[2] == 'cleanup' then
  n = redis.call('ZREM', readersKey, ARGV[1])
  redis.call('HDEL', metaKey, ARGV[1])
else
  local cursor = '0'
  repeat
    local r = redis.call('ZSCAN', readersKey, cursor, 'MATCH', ARGV[1] .. '*', 'COUNT', 100)
    cursor = r[1]
    for i = 1, #r[2], 2 do
      n = n + redis.call('ZREM', readersKey, r[2][i])
      redis.call('HDEL', metaKey, r[2][i])
    end
  until cursor == '0'
end
local cur = redis.pcall('GET', KEYS[1])
if cur ~= marker and cur ~= false then
  return n -- a writer's key (or another type): not the readers'
end
local tm = redis.call('TIME')
local ms = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
repeat
  local dead = redis.call('ZRANGEBYSCORE', readersKey, '-inf', ms, 'LIMIT', 0, 100)
  if #dead > 0 then
    redis.call('ZREM', readersKey, unpack(dead))
    redis.call('HDEL', metaKey, unpack(dead))
  end
until #dead < 100
local last = redis.call('ZRANGE', readersKey, -1, -1, 'WITHSCORES')
if last[1] then
  if cur then
    local px = tonumber(last[2]) - ms
    redis.call('PEXPIRE', KEYS[1], px)
    redis.call('PEXPIRE', readersKey, px)
    if redis.call('EXISTS', metaKey) == 1 then
      redis.call('PEXPIRE', metaKey, px)
    end
  end
  return n
end
-- Nobody reads any more: the key is free.
redis.call('DEL', metaKey)
if cur then
  redis.call('DEL', KEYS[1])
elseif n == 0 then
  return 0 -- the marker expired: nothing of ours left, nothing freed by us
end
local channel = string.match(KEYS[1], '^(.-){') .. 'released:' .. KEYS[1]
local head = ''
if queued then
  head = handOn(KEYS[1], q, qt, KEYS[1] .. ':fence', channel)
end
if head == '' and ARGV[2] ~= 'cleanup' then
  redis.call('PUBLISH', channel, '')
end
return n
