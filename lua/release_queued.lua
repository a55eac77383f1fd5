-- The rest of release.lua, after handon.lua: somebody queues, or the key is
-- not ours.
local queue = isQueue(q, qt)
local nextHead -- the head once the holder's entry left, if read here (false: nobody)
if queue then
  dropDead(q, qt)
  local entry = ARGV[1]
  if string.sub(entry, -1) == '.' then
    entry = string.sub(entry, 1, -2)
  end
  entry = entry .. ':'
  -- The holder's entry is usually the head, and the next one the new head;
  -- else look for it.
  local hs = redis.call('ZRANGE', q, 0, 1)
  if hs[1] and string.sub(hs[1], 1, #entry) == entry then
    redis.call('ZREM', q, hs[1])
    redis.call('ZREM', qt, hs[1])
    nextHead = hs[2] or false
  else
    dropEntries(q, qt, entry)
  end
end
-- GET answered for a string (a plain lock) or no key; any other type is
-- not ours.
if type(cur) == 'table' or cur and not mine then
  return 0
end
-- The key is ours, or free: no attempt of the call holds it here (a failed
-- attempt's cleanup deleted it, or it expired), and the call's entry may
-- have been the head that the free key waited for. Either way the key is
-- handed on to the queue's head as the release of a held key does: nobody
-- else would tell the new head, which would wait for its next poll.
if cur then
  if metaKey then
    redis.call('DEL', KEYS[1], metaKey)
  else
    redis.call('DEL', KEYS[1])
  end
end
local head = ''
if queue then
  head = handOn(KEYS[1], q, qt, KEYS[1] .. ':fence', channel, nextHead)
end
if cur and head == '' then
  redis.call('PUBLISH', channel, '')
end
return cur and 1 or 0
