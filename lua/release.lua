-- Release the lock on one node, only if it holds a value of our Acquire call.
-- The script is the form's preludes (meta_none.lua or meta_key.lua:
-- metaKey; channel_lock.lua or channel_slot.lua: channel, where the
-- release is announced to wake waiters), this file, handon.lua, then
-- release_queued.lua (scripts.go).
-- KEYS[1] lock key; ARGV[1] the call's prefix "<token>." (matches the value
-- of every attempt of the call, so a late grant of an earlier attempt goes
-- too: the release ends the lease for every share of it).
-- The waiting order (queue.go) is KEYS[1] .. ':q' and ':qt', the fence
-- counter KEYS[1] .. ':fence', in the lock key's slot. The holder's own
-- entry ("<token>:<client>") leaves the queue, and the release is announced
-- to the queue's head (the only waiter the free key will go to): its entry,
-- on channel .. ':' .. <client>; or "" on channel when nobody queues, if
-- the form's waitMark exists (see the common case below). A
-- head that queued for a plain lock is granted the free key at once, with
-- the fence counter: see handOn (handon.lua). A lock with metadata deletes
-- its meta key with the lock key, in one DEL.
-- A release that finds the key free (gone) hands it on to the head the same
-- way: only a key held by another owner (or of another type) stays as it is.
-- Returns 1 when deleted, 0 when the key is gone or holds another owner's
-- value.
local q, qt = KEYS[1] .. ':q', KEYS[1] .. ':qt'
local cur = redis.pcall('GET', KEYS[1])
local mine = type(cur) == 'string' and string.sub(cur, 1, #ARGV[1]) == ARGV[1]
-- The common case, before any helper is made: the key is ours, nobody
-- queues, and waitMark (the form's prelude: the key that lives while a
-- waiter with no queue entry waits for a release) does not exist, so
-- nobody is told.
if mine and redis.call('EXISTS', q, waitMark) == 0 then
  if metaKey then
    redis.call('DEL', KEYS[1], metaKey)
  else
    redis.call('DEL', KEYS[1])
  end
  return 1
end
