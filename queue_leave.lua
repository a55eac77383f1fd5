-- Leave the waiting order of a lock on one node (queue.go): a waiting
-- Acquire call that gave up takes its entry out, so nobody waits behind it.
-- KEYS[1] lock key, KEYS[2] the queue, KEYS[3] its expiries (same slot)
-- ARGV[1] the call's entry "<token>:<client>"; ARGV[2] the lock's release
-- channel. When the caller was the head and the key is free, the new head is
-- woken as a release wakes it (release.lua).
-- Returns 1 when an entry was removed, 0 otherwise.
if redis.call('TYPE', KEYS[2])['ok'] ~= 'zset' or redis.call('TYPE', KEYS[3])['ok'] ~= 'zset' then
  return 0
end
local was = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
local n = redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
if n == 1 and was == ARGV[1] and redis.call('EXISTS', KEYS[1]) == 0 then
  local head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
  if head then
    local channel, sep = ARGV[2], string.find(head, ':', 1, true)
    if sep then
      channel = channel .. ':' .. string.sub(head, sep + 1)
    end
    redis.call('PUBLISH', channel, head)
  end
end
return n
