-- Release one hold of a re-entrant lock on one node (reentry.go); the key
-- goes only with its last hold.
-- KEYS[1] lock key; its queue is KEYS[1] .. ':q' and its expiries
-- KEYS[1] .. ':qt', in its slot (queue.go);
-- ARGV[1] the owner's token; ARGV[2] the hold id; ARGV[3] the channel to
-- announce a deleted key on; ARGV[4] "" for a release, or the number of one
-- failed attempt to clean up: the hold goes only if that attempt wrote it,
-- and nobody is woken (nobody waits for such a key), as cleanup.lua does.
-- A release announces a deleted key to the queue's head as release.lua does,
-- and takes the owner's entry out of the queue, whoever holds the key.
-- The script is this file (the common case, before any helper is made),
-- handon.lua, then hold_release_rest.lua (scripts.go).
-- Returns 1 when the key was deleted, 2 when the hold was removed and others
-- keep the key, 0 when the node has no such hold (or the key is a plain lock,
-- or another owner's).
local hold = 'h:' .. ARGV[2]
local release = ARGV[4] == ''
local t = redis.call('TYPE', KEYS[1])['ok']
local ours = t == 'hash' and redis.call('HGET', KEYS[1], 'rl-owner') == ARGV[1]
if ours then
  local cur = redis.call('HGET', KEYS[1], hold)
  if cur == false or (not release and cur ~= ARGV[4]) then
    return 0
  end
  redis.call('HDEL', KEYS[1], hold)
  -- Fields rl-owner, rl-fence, rl-ttl and rl-meta, and one per hold.
  if redis.call('HLEN', KEYS[1]) > 4 then
    return 2
  end
  redis.call('DEL', KEYS[1])
  if not release then
    return 1
  end
  -- The common case: the last hold went, nobody queues and no barging
  -- waiter (or observer) marked the key: nobody is told. The rest tells
  -- the queue's head, or the name's channel when only a mark is there.
  if redis.call('EXISTS', KEYS[1] .. ':q', KEYS[1] .. ':b') == 0 then
    return 1
  end
elseif not release then
  return 0
end
-- Past the common case (handon.lua, then hold_release_rest.lua): somebody
-- queues, or the key is not ours.
