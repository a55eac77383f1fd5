-- The rest of hold_release.lua, after handon.lua: a release that finds
-- somebody queueing or a barging waiter's mark, or a key that is not ours
-- (ours: false).
-- leave takes the owner's own entries out of the queue and, when the key
-- is free, announces it to the queue's head (or to the name's channel when
-- nobody queues), as release.lua does.
local function leave(free)
  local q, qt = KEYS[1] .. ':q', KEYS[1] .. ':qt'
  local head, channel = '', ARGV[3]
  if isQueue(q, qt) then -- (handon.lua)
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
if not ours then
  -- Not ours here (gone, or another owner's): a release still takes the
  -- owner's entry out, or it would stand at the head of this node's
  -- queue, a dead waiter, until it expires.
  leave(t == 'none')
  return 0
end
-- The last hold went: the owner's own entry, if it is still there, leaves
-- with the key, and the queue's head is told.
leave(true)
return 1
