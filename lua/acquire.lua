-- Acquire a lock held as a string key on one node, for one attempt of one
-- Acquire call: the common case. The forms that run it (form.go) are the
-- plain lock, the lock with metadata, a semaphore's slot and its gate.
-- The script is the form's prelude, this file, then counter.lua,
-- queue.lua and acquire_taken.lua for every other case (scripts.go).
-- The prelude sets fenceKey, the fence counter (KEYS[1] .. ':fence', or the
-- semaphore's), and metaKey and metaText: the meta key (KEYS[1] .. ':meta')
-- and what a lock with metadata keeps in it, "<token>:<metadata>", with the
-- lock key's expiry (never longer); nil for a form without metadata.
-- KEYS[1] the lock key.
-- ARGV[1] this attempt's value, "<token>.<attempt>" (the token has no dot);
-- ARGV[2] the TTL in ms; ARGV[3] "1" to take a fence (INCR the counter),
-- "0" for none; ARGV[4] how the call uses the waiting order (queue.go), the
-- queue being KEYS[1] .. ':q' (entries by priority) and KEYS[1] .. ':qt'
-- (the same entries by expiry, node time), both in the lock key's slot:
-- "wait": a free key goes to the queue's head only (or to anyone when
-- nobody queues), and a refused caller takes or keeps its place, its entry
-- ARGV[5] ("<token>:<client>", and ":<ttl>:<f>" when a release may grant
-- it the key) with priority ARGV[6] (a decimal the client fixed for the
-- call), living ARGV[7] ms after each refresh; "try": a free key goes to
-- the caller only when nobody queues, and a refused caller is not queued;
-- "barge": no queue.
-- Returns, in the common case (the key was free and nobody queued), an
-- integer: the fence, the counter after its INCR (below 2^53, so exact as
-- a Lua number), or 0 without fencing. Otherwise one bulk string:
-- "1:<fence>" when the key now holds this attempt's value (or the release's
-- grant to the call, "<token>.0", which stays), fence being the counter in
-- decimal (exact past 2^53; "0" without fencing); "0:<pttl>" when someone
-- else holds the key (or a later attempt of the same call: an attempt never
-- takes a key back from a newer one), or
-- "0:0" when the key is free but another waiter comes first; in "wait" mode
-- ":<rank>" follows, the caller's rank in the queue (0: the head). Every
-- check comes before any write that stays, so an error leaves every key as
-- it was: WRONGTYPE for a key of another type, BADCOUNTER for a counter that
-- is not a decimal in [0, 2^63-2].
local fenced = ARGV[3] == '1'
local queueKey, queueTimesKey -- queueTimesKey is set past the common case
if ARGV[4] ~= 'barge' then
  queueKey = KEYS[1] .. ':q'
end
-- The common case, before any helper is made: nobody queues and SET NX
-- takes the free key. The INCR that takes the fence is the counter's
-- check: a reply that is not a number in [1, 2^53) is answered below
-- (counter.lua), the key written here deleted again if the counter refuses.
local incr, took
if not queueKey or redis.call('EXISTS', queueKey) == 0 then
  took = redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
end
if took then
  local f = 0 -- answered as an integer: no number is formatted as text here
  if fenced then
    incr = redis.pcall('INCR', fenceKey)
    if type(incr) == 'number' and incr >= 1 and incr < 9007199254740992 then
      f, incr = incr, nil
    end
  end
  if incr == nil then
    if metaKey then
      -- A ms shorter: the clock may tick between the two SETs, and the
      -- meta key never outlives the lock key.
      redis.call('SET', metaKey, metaText, 'PX', tonumber(ARGV[2]) - 1)
    end
    return f
  end
end
-- Past the common case (counter.lua, queue.lua, then acquire_taken.lua).
if queueKey then
  queueTimesKey = KEYS[1] .. ':qt'
end
local queueExists = false
