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
local fenced = ARGV[3] == '1'
local queueKey, queueTimesKey
if ARGV[4] ~= 'barge' then
  queueKey, queueTimesKey = KEYS[1] .. ':q', KEYS[1] .. ':qt'
end
local incr
local queueExists = false
