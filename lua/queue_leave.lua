-- Leave the waiting order of a lock on one node (queue.go): a waiting
-- Acquire call that gave up takes its entry out, so nobody waits behind it.
-- KEYS[1] lock key; its queue is KEYS[1] .. ':q' and its expiries
-- KEYS[1] .. ':qt' (same slot)
-- ARGV[1] the call's entry "<token>:<client>[:<ttl>:<f>]"; ARGV[2] the
-- lock's release channel; ARGV[3] "1" when the call gave up: then a release's
-- grant to it ("<token>.0", see release.lua) goes too. A call that won
-- passes "0", as the key is then its lock.
-- When the caller was the head (or its grant went) and the key is free, the
-- new head is woken as a release wakes it, to take the key with its next
-- attempt.
-- Returns 1 when an entry was removed, 0 otherwise.
local freed = false
if ARGV[3] == '1' then
  local token = string.match(ARGV[1], '^[^:]+')
  if token and redis.pcall('GET', KEYS[1]) == token .. '.0' then
    redis.call('DEL', KEYS[1])
    freed = true
  end
end
local q, qt = KEYS[1] .. ':q', KEYS[1] .. ':qt'
if redis.call('TYPE', q)['ok'] ~= 'zset' or redis.call('TYPE', qt)['ok'] ~= 'zset' then
  return 0
end
local was = redis.call('ZRANGE', q, 0, 0)[1]
local n = redis.call('ZREM', q, ARGV[1])
redis.call('ZREM', qt, ARGV[1])
if (freed or n == 1 and was == ARGV[1]) and redis.call('EXISTS', KEYS[1]) == 0 then
  local head = redis.call('ZRANGE', q, 0, 0)[1]
  if head then
    local channel, client = ARGV[2], string.match(head, '^[^:]*:([^:]+)')
    if client then
      channel = channel .. ':' .. client
    end
    redis.call('PUBLISH', channel, head)
  end
end
return n
