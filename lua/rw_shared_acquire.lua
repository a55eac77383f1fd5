-- Acquire the shared side of a read-write lock (rw.go) on one node, for one
-- attempt of one AcquireShared call: the common case. The script is this
-- file, counter.lua, queue.lua, then rw_shared_acquire_rest.lua
-- (scripts.go). The exclusive side is the plain lock (acquire.lua),
-- unchanged: while readers hold, the lock key KEYS[1] keeps the marker
-- "rl-readers", which no attempt's value equals (a value has a '.'), with
-- the expiry of the last reader; so a writer's SET NX fails on it as on any
-- holder, and every exclusive extend, release and cleanup, which compare
-- values, leaves it alone. The readers are the sorted set KEYS[1] .. ':r'
-- (same slot): member the value a reader's lease counts ("<token>.<n>"),
-- score its own expiry in node ms (TIME): each reader's lease is its own.
-- KEYS[1] the lock key; its fence counter is KEYS[1] .. ':fence', its
-- queue KEYS[1] .. ':q' and ':qt'.
-- ARGV[1] to ARGV[7] as for acquire.lua; a reader's queue entry ends ":s",
-- which marks it a reader's (handon.lua never grants it the key). Last
-- (taken off ARGV here), the reader's metadata, "" for none: kept in the
-- hash KEYS[1] .. ':rm', field the reader's member, which expires with the
-- marker and loses each field with its member.
-- A reader enters when no writer holds the key and no writer's entry comes
-- before its own in the queue ("try": none in the queue; "barge": the queue
-- is not looked at): readers queued behind a writer wait behind it, and a
-- writer at the head is not starved by readers that came after it.
-- Returns as acquire.lua does; WRONGTYPE for keys of another type,
-- BADCOUNTER for a corrupt counter, with every key as it was.
local marker = 'rl-readers'
local readersKey = KEYS[1] .. ':r'
local metaKey, meta = KEYS[1] .. ':rm', table.remove(ARGV)
local fenceKey = KEYS[1] .. ':fence'
local bargeMark = true -- a refused barging attempt marks the key (queue.lua's markBarger)
local fenced = ARGV[3] == '1'
local queueKey, queueTimesKey
if ARGV[4] ~= 'barge' then
  queueKey, queueTimesKey = KEYS[1] .. ':q', KEYS[1] .. ':qt'
end
-- The common case, before any helper is made: the key is free, nobody
-- queues; the reader set is written with the marker, and the fence taken.
local incr, took
if not queueKey or redis.call('EXISTS', queueKey) == 0 then
  took = redis.call('SET', KEYS[1], marker, 'NX', 'PX', ARGV[2])
end
if took then
  local tm = redis.call('TIME')
  local first = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000) + tonumber(ARGV[2])
  -- A set whose marker is gone holds no live reader (the marker lives
  -- until the last reader's expiry), so its expiry is set afresh.
  local ok = redis.pcall('ZADD', readersKey, first, ARGV[1])
  if type(ok) ~= 'number' then
    redis.call('DEL', KEYS[1])
    return ok -- WRONGTYPE: the readers key is not a sorted set
  end
  redis.call('PEXPIRE', readersKey, ARGV[2])
  if meta ~= '' then
    ok = redis.pcall('HSET', metaKey, ARGV[1], meta)
    if type(ok) ~= 'number' then
      redis.call('DEL', KEYS[1])
      redis.call('ZREM', readersKey, ARGV[1])
      return ok -- WRONGTYPE: the metadata key is not a hash
    end
    redis.call('PEXPIRE', metaKey, ARGV[2])
  end
  local f = '0'
  if fenced then
    incr = redis.pcall('INCR', fenceKey)
    if type(incr) == 'number' and incr >= 1 and incr < 9007199254740992 then
      f, incr = string.format('%.0f', incr), nil
    end
  end
  if incr == nil then
    return '1:' .. f
  end
end
-- Past the common case (counter.lua, queue.lua, then rw_shared_acquire_rest.lua).
local queueExists = false
