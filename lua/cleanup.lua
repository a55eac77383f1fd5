-- Clean up after one failed acquisition attempt on one node: delete the key
-- only if it holds exactly that attempt's value. A delayed cleanup of
-- attempt k then never deletes the key of attempt k+1 of the same call, nor
-- the value a lease won (docs/design.md, "What a lease counts").
-- The script is the form's preludes (as release.lua's: metaKey, channel),
-- this file, handon.lua, then cleanup_queued.lua (scripts.go).
-- KEYS[1] lock key; ARGV[1] the attempt's value "<token>.<attempt>". The
-- waiting order (queue.go) is
-- KEYS[1] .. ':q' and ':qt', the fence counter KEYS[1] .. ':fence'. When
-- the cleanup deletes the key and somebody queues, the free key is handed
-- on to the queue's head as a release hands it on (handOn, handon.lua):
-- the attempt may have taken it after a release had found nobody of the
-- call's to grant it to, and the head, which may be the call itself, would
-- otherwise wait for its next poll. The call's own entry stays: it waits on.
-- A lock with metadata deletes its meta key with the lock key, in one DEL.
-- Returns 1 when deleted, 0 otherwise.
if redis.pcall('GET', KEYS[1]) ~= ARGV[1] then
  return 0 -- not the attempt's value, no key, or a key of another type
end
if metaKey then
  redis.call('DEL', KEYS[1], metaKey)
else
  redis.call('DEL', KEYS[1])
end
local q, qt = KEYS[1] .. ':q', KEYS[1] .. ':qt'
if redis.call('EXISTS', q) == 0 then
  return 1
end
