-- Release or clean up a reader of a read-write lock (rw.go) on one node.
-- The script is this file (everything but the queue, with no helper
-- made), then, when somebody queues or a barging waiter marked the key
-- (KEYS[1] .. ':b'), handon.lua and rw_shared_release_queued.lua
-- (scripts.go).
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
local release = ARGV[2] ~= 'cleanup'
local channel = string.match(KEYS[1], '^(.-){') .. 'released:' .. KEYS[1]
-- What the readers' part leaves for the queue's part: the reply, whether
-- the key is free for the queue's head (freed), and whether the free key
-- is announced on the channel when nobody is handed it (announce).
local n, freed, announce = 0, false, false
if redis.call('TYPE', readersKey)['ok'] ~= 'zset' then
  -- No reader here: a free key still goes to the queue's head.
  freed = redis.call('EXISTS', KEYS[1]) == 0
else
  if release then
    local cursor = '0'
    repeat
      local r = redis.call('ZSCAN', readersKey, cursor, 'MATCH', ARGV[1] .. '*', 'COUNT', 100)
      cursor = r[1]
      for i = 1, #r[2], 2 do
        n = n + redis.call('ZREM', readersKey, r[2][i])
        redis.call('HDEL', metaKey, r[2][i])
      end
    until cursor == '0'
  else
    n = redis.call('ZREM', readersKey, ARGV[1])
    redis.call('HDEL', metaKey, ARGV[1])
  end
  local cur = redis.pcall('GET', KEYS[1])
  if cur == marker or cur == false then -- else a writer's key (or another type): not the readers'
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
    else
      -- Nobody reads any more: the key is free (unless the marker had
      -- expired and nothing of ours was left: nothing freed by us).
      redis.call('DEL', metaKey)
      if cur then
        redis.call('DEL', KEYS[1])
      end
      freed = cur ~= false or n > 0
      announce = freed and release
    end
  end
end
-- The common case: nobody queues and no barging waiter marked the key,
-- so nobody is told; the rest announces a freed key to a mark.
if redis.call('EXISTS', q, KEYS[1] .. ':b') == 0 then
  return n
end
-- Past the common case (handon.lua, then rw_shared_release_queued.lua).
