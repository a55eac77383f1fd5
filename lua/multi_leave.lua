-- Leave the waiting order of every name of a set on one node (multi.go):
-- a waiting AcquireMulti call that gave up, or won (its entries then stay
-- until its release, which removes them: release.lua), takes its entry out
-- of each name's queue, and wakes that queue's new head if the call was the
-- head of a free key, as queue_leave.lua does for one name.
-- KEYS[1..k] the lock keys; ARGV[1] the call's entry "<token>:<client>".
-- Returns how many entries were removed.
local removed = 0
for i = 1, #KEYS do
  local key = KEYS[i]
  local q, qt = key .. ':q', key .. ':qt'
  if redis.call('TYPE', q)['ok'] == 'zset' and redis.call('TYPE', qt)['ok'] == 'zset' then
    local was = redis.call('ZRANGE', q, 0, 0)[1]
    local n = redis.call('ZREM', q, ARGV[1])
    redis.call('ZREM', qt, ARGV[1])
    removed = removed + n
    if n == 1 and was == ARGV[1] and redis.call('EXISTS', key) == 0 then
      local head = redis.call('ZRANGE', q, 0, 0)[1]
      if head then
        local channel = string.match(key, '^(.-){') .. 'released:' .. key
        local client = string.match(head, '^[^:]*:([^:]+)')
        if client then
          channel = channel .. ':' .. client
        end
        redis.call('PUBLISH', channel, head)
      end
    end
  end
end
return removed
