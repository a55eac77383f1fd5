-- Break a lock on one node whatever its owner (Client.ForceRelease): delete
-- the lock key if it is a lock (a string, or a hash with an owner), never the
-- fence counter, and announce the release to the queue's head as
-- release.lua does, so the next waiter goes at once. The queue stays: its
-- waiters are alive and keep their order.
-- KEYS[1] lock key, KEYS[2] the queue, KEYS[3] its expiries, KEYS[4] a
-- plain lock's meta key (deleted with the lock key); ARGV[1] the release
-- channel.
-- Returns {kind, holder, meta} of what was deleted: kind "none" when there
-- was no lock ("plain", "reentrant" or "shared": readers, otherwise), meta the holder's
-- metadata ("" when none; a leader's value: see holderMeta).
local t = redis.call('TYPE', KEYS[1])['ok']
local kind, holder, meta = 'none', '', ''
if t == 'string' and redis.call('GET', KEYS[1]) == 'rl-readers' then
  -- A read-write lock's readers (rw.go): the marker and the reader set go.
  kind = 'shared'
  redis.call('DEL', KEYS[1] .. ':r', KEYS[1] .. ':rm')
elseif t == 'string' then
  local v = redis.call('GET', KEYS[1])
  local dot = string.find(v, '.', 1, true)
  kind, holder = 'plain', dot and string.sub(v, 1, dot - 1) or v
  meta = holderMeta(redis.pcall('GET', KEYS[4]), holder)
elseif t == 'hash' and redis.call('HEXISTS', KEYS[1], 'rl-owner') == 1 then
  kind, holder = 'reentrant', redis.call('HGET', KEYS[1], 'rl-owner')
  meta = redis.call('HGET', KEYS[1], 'rl-meta') or ''
elseif t ~= 'none' then
  return redis.error_reply('WRONGTYPE lock key ' .. KEYS[1] .. ' holds a ' .. t .. ', not a lock: left as it is')
end
if kind == 'none' then
  return {kind, holder, meta}
end
redis.call('DEL', KEYS[1], KEYS[4])
local head, channel = '', ARGV[1]
if redis.call('TYPE', KEYS[2])['ok'] == 'zset' then
  head = redis.call('ZRANGE', KEYS[2], 0, 0)[1] or ''
  local client = string.match(head, '^[^:]*:([^:]+)')
  if client then
    channel = channel .. ':' .. client
  end
end
redis.call('PUBLISH', channel, head)
return {kind, holder, meta}
