-- Acquire the re-entrant form of a lock (reentry.go) on one node, for one
-- attempt of one Acquire call: the key is a hash (fields rl-owner, rl-fence,
-- rl-ttl, rl-meta and one "h:<hold id>" per hold). The script is this
-- file, counter.lua, queue.lua, then hold_acquire_rest.lua (scripts.go).
-- KEYS[1] the lock key; its fence counter is KEYS[1] .. ':fence' and its
-- queue KEYS[1] .. ':q' and ':qt', in its slot.
-- ARGV[1] to ARGV[4] (and ARGV[5] to ARGV[7] in "wait" mode) as for
-- acquire.lua; then, last, the holder's metadata (rl-meta). The call's own
-- hold is "h:<token>", holding the number of the attempt that wrote it, so
-- that attempts compare as string values do. A key of the other form (a
-- string) is another owner's: held, never an error, never taken over.
-- Returns as acquire.lua does; WRONGTYPE for a key of another type (or a
-- hash without rl-owner), BADCOUNTER for a corrupt counter, with every key
-- as it was.
local meta = table.remove(ARGV)
local fenceKey = KEYS[1] .. ':fence'
local bargeMark = true -- a refused barging attempt marks the key (queue.lua's markBarger)
local fenced = ARGV[3] == '1'
local queueKey, queueTimesKey
if ARGV[4] ~= 'barge' then
  queueKey, queueTimesKey = KEYS[1] .. ':q', KEYS[1] .. ':qt'
end
local incr
-- The common case, before any helper is made: the key is free and nobody
-- queues. The INCR that takes the fence is the counter's check, as in
-- acquire.lua: a reply that is not a number in [1, 2^53) is answered past
-- here (counter.lua), before the key is written.
if redis.call('EXISTS', KEYS[1]) == 0 and (not queueKey or redis.call('EXISTS', queueKey) == 0) then
  local f = '0'
  if fenced then
    incr = redis.pcall('INCR', fenceKey)
    if type(incr) == 'number' and incr >= 1 and incr < 9007199254740992 then
      f, incr = string.format('%.0f', incr), nil
    end
  end
  if incr == nil then
    local dot = string.find(ARGV[1], '.', 1, true)
    redis.call('HSET', KEYS[1], 'rl-owner', string.sub(ARGV[1], 1, dot - 1), 'rl-fence', f, 'rl-ttl', ARGV[2],
      'rl-meta', meta, 'h:' .. string.sub(ARGV[1], 1, dot - 1), string.sub(ARGV[1], dot + 1))
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return '1:' .. f
  end
end
-- Past the common case (counter.lua, queue.lua, then hold_acquire_rest.lua).
local queueExists = false
