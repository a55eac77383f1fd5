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
-- Returns 1 when the key was deleted, 2 when the hold was removed and others
-- keep the key, 0 when the node has no such hold (or the key is a plain lock,
-- or another owner's).
local hold = 'h:' .. ARGV[2]
local release = ARGV[4] == ''
-- leave takes the owner's own entries out of the queue and, when the key
-- is free, announces it to the queue's head (or to the name's channel when
-- nobody queues), as release.lua does.
local function leave(free)
  local q, qt = KEYS[1] .. ':q', KEYS[1] .. ':qt'
  local head, channel = '', ARGV[3]
  if isQueue(q, qt) then -- (handon.lua, which this script starts with)
    dropDead(q, qt)
    dropEntries(q, qt, ARGV[1] .. ':')
    head = redis.call('ZRANGE', q, 0, 0)[1] or ''
    local client = string.match(head, '^[^:]*:([^:]+)')
    if client then
      channel = channel .. ':' .. client
    end
  end
  if free then
    redis.call('PUBLISH', channel, head)
  end
end
local t = redis.call('TYPE', KEYS[1])['ok']
if t ~= 'hash' or redis.call('HGET', KEYS[1], 'rl-owner') ~= ARGV[1] then
  -- Not ours here (gone, or another owner's): a release still takes the
  -- owner's entry out, or it would stand at the head of this node's
  -- queue, a dead waiter, until it expires.
  if release then
    leave(t == 'none')
  end
  return 0
end
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
if release then
  -- The owner's own entry, if it is still there, leaves with the key.
  leave(true)
end
return 1
