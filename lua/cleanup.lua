-- Clean up after one failed acquisition attempt on one node: delete the key
-- only if it holds exactly that attempt's value. A delayed cleanup of
-- attempt k then never deletes the key of attempt k+1 of the same call.
-- KEYS[1] lock key; ARGV[1] the attempt's value "<token>.<attempt>".
-- The waiting order (queue.go): KEYS[2] the queue, KEYS[3] its expiries,
-- KEYS[4] the fence counter (by default KEYS[1] .. ':q', ':qt', ':fence');
-- ARGV[2] the lock's release channel. When the cleanup deletes the key and
-- somebody queues, the free key is handed on to the queue's head as a
-- release hands it on (handOn, handon.lua, which this script starts with):
-- the attempt may have taken it after a release had found nobody of the
-- call's to grant it to, and the head, which may be the call itself, would
-- otherwise wait for its next poll. The call's own entry stays: it waits on.
-- KEYS[5] the meta key (by default KEYS[1] .. ':meta'): the attempt's
-- metadata, deleted with the key in one DEL.
-- Returns 1 when deleted, 0 otherwise.
if redis.call('TYPE', KEYS[1])['ok'] ~= 'string' then
  return 0
end
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1], KEYS[5] or (KEYS[1] .. ':meta'))
local q, qt = KEYS[2] or (KEYS[1] .. ':q'), KEYS[3] or (KEYS[1] .. ':qt')
if ARGV[2] and isQueue(q, qt) then
  handOn(KEYS[1], q, qt, KEYS[4] or (KEYS[1] .. ':fence'), ARGV[2])
end
return 1
