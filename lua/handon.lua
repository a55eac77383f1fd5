-- handOn, dropDead, dropEntries and isQueue: a Lua fragment that release.lua,
-- cleanup.lua and hold_release.lua put after their common case (see
-- scripts.go), not a script of its own.
-- handOn(key, q, qt, fenceKey, channel, head) hands a free lock key on to
-- the head of its waiting order (queue.go): q the queue, qt its expiries,
-- fenceKey the fence counter, channel the lock's release channel; head is
-- the queue's head when the caller has read it after dropDead (false:
-- nobody waits), or nil: then the entries that expired (dead waiters) are
-- dropped and the head read here. A head that queued for a plain lock
-- ("<token>:<client>:<ttl ms>:<f>", f "1" fenced, "0" not) is granted the
-- key: it is set to "<token>.0" for the head's TTL, the fence counter
-- incremented when fenced (unless it is not a decimal in [0, 2^63-2], the
-- acquire script's check: then no grant), and "<entry> <fence>" published
-- on channel .. ':' .. <client>; if no connection of the head's Client
-- listens on this node (its process is gone), the grant is undone. Any
-- other head gets the notice "<entry>" there, and takes the key with its
-- next attempt; a reader's (ending ":s", rw.go) is never granted, and the
-- readers right behind it (up to 63) get their notices too. Returns the
-- head's entry, or '' when nobody waits.
-- The scripts call only the commands of the README's minimal ACL.
-- dropDead takes the entries that expired (dead waiters) out of the queue q
-- and its expiries qt, by the node's clock.
local function dropDead(q, qt)
  local tm = redis.call('TIME')
  local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
  repeat
    local dead = redis.call('ZRANGEBYSCORE', qt, '-inf', now, 'LIMIT', 0, 100)
    if #dead > 0 then
      redis.call('ZREM', q, unpack(dead))
      redis.call('ZREM', qt, unpack(dead))
    end
  until #dead < 100
end
-- dropEntries takes every entry that starts with prefix ("<token>:", the
-- entries of one owner's calls) out of the queue q and its expiries qt.
local function dropEntries(q, qt, prefix)
  local cursor = '0'
  repeat
    local r = redis.call('ZSCAN', q, cursor, 'MATCH', prefix .. '*', 'COUNT', 100)
    cursor = r[1]
    for i = 1, #r[2], 2 do
      redis.call('ZREM', q, r[2][i])
      redis.call('ZREM', qt, r[2][i])
    end
  until cursor == '0'
end
-- isQueue reports whether q and qt both hold a sorted set: a waiting order
-- to hand the key on to. Keys of another type are not one.
local function isQueue(q, qt)
  return redis.call('EXISTS', q, qt) == 2 and redis.call('TYPE', q)['ok'] == 'zset' and
    redis.call('TYPE', qt)['ok'] == 'zset'
end
local function handOn(key, q, qt, fenceKey, channel, head)
  if head == nil then
    dropDead(q, qt)
    head = redis.call('ZRANGE', q, 0, 0)[1]
  end
  if not head then
    return ''
  end
  local token, client, ttl, fenced = string.match(head, '^([^:]+):([^:]+):(%d+):([01])$')
  client = client or string.match(head, '^[^:]*:([^:]+)')
  local base = channel
  if client then
    channel = channel .. ':' .. client
  end
  local f = '0'
  if token and fenced == '1' then
    local c = redis.pcall('GET', fenceKey)
    if c ~= false and (type(c) ~= 'string' or not (c == '0' or string.match(c, '^[1-9]%d*$')) or #c > 19 or
      (#c == 19 and c >= '9223372036854775807')) then
      token = nil -- not over a counter INCR would refuse or overflow
    end
  end
  if not token then
    redis.call('PUBLISH', channel, head)
    if string.sub(head, -2) == ':s' then
      -- A reader at the head (rw.go): the readers right behind it are told
      -- too, and come in with it.
      for _, e in ipairs(redis.call('ZRANGE', q, 1, 63)) do
        local c = string.match(e, '^[^:]*:([^:]+)')
        if string.sub(e, -2) ~= ':s' or not c then
          break
        end
        redis.call('PUBLISH', base .. ':' .. c, e)
      end
    end
    return head
  end
  redis.call('SET', key, token .. '.0', 'PX', ttl)
  if fenced == '1' then
    local n = redis.call('INCR', fenceKey)
    if n < 9007199254740992 then
      f = string.format('%.0f', n) -- exact, as in the acquire script
    else
      f = redis.call('GET', fenceKey)
    end
  end
  if redis.call('PUBLISH', channel, head .. ' ' .. f) == 0 then
    redis.call('DEL', key)
  end
  return head
end
