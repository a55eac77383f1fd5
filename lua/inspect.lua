-- Read one node's state of a lock, changing nothing (inspect.go).
-- KEYS[1] lock key, KEYS[2] fence counter key, KEYS[3] the queue, KEYS[4]
-- its expiries (queue.go), KEYS[5] a plain lock's metadata key (same slot).
-- ARGV[1] how many waiters to list, at most.
-- Returns {kind, holder, meta, pttl, holds, counter, term, now, depth,
-- entry, priority, entry, priority...}: kind "none", "plain" (a string
-- "<token>.<attempt>": holder the token, meta the metadata KEYS[5] keeps
-- for that token, term the election term announced there, if any: see
-- holderMeta) or "reentrant" (a hash: holder its owner, holds its number of
-- holds; never a term), "shared" (the readers of a read-write lock, see
-- readers), or the Redis type of a key that is not a lock; pttl
-- the key's PTTL (-2 absent, -1 no expiry); counter the fence counter as a
-- string, or "" when absent or not a string. now is the node's time in ms
-- (0 when nobody queues); depth the number of live entries in the queue
-- (expired ones, dead waiters not purged yet, left out), and then the first
-- ARGV[1] of them in order, each with its priority (the waiting call's start,
-- in microseconds by its Client's clock). The holder's own entry, which
-- stays until its release, is neither counted nor listed when it is among
-- the entries read (it is the head when the holder won by waiting).
-- The script calls only the commands of the README's minimal ACL (no ZCARD,
-- ZSCORE: ranks count the entries).
-- readers returns {the number of live readers in the reader set r, the
-- first max of them: token, ms left, metadata (from the hash rm), ...}
-- (ranks count them, as below).
local function readers(r, rm, max)
  local tm = redis.call('TIME')
  local ms = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
  local last = redis.call('ZRANGE', r, -1, -1)[1]
  if not last then
    return {0, {}}
  end
  local live = redis.call('ZRANGEBYSCORE', r, '(' .. ms, '+inf', 'WITHSCORES', 'LIMIT', 0, max)
  if #live == 0 then
    return {0, {}}
  end
  local n = redis.call('ZRANK', r, last) - redis.call('ZRANK', r, live[1]) + 1
  local out = {}
  local metas = redis.call('TYPE', rm)['ok'] == 'hash'
  for i = 1, #live, 2 do
    local dot = string.find(live[i], '.', 1, true)
    out[#out + 1] = dot and string.sub(live[i], 1, dot - 1) or live[i]
    out[#out + 1] = string.format('%.0f', tonumber(live[i + 1]) - ms)
    out[#out + 1] = metas and redis.call('HGET', rm, live[i]) or ''
  end
  return {n, out}
end
local t = redis.call('TYPE', KEYS[1])['ok']
local kind, holder, meta, term, holds = t, '', '', '', 0
if t == 'none' then
  kind = 'none'
elseif t == 'string' and redis.call('GET', KEYS[1]) == 'rl-readers' then
  -- A read-write lock's readers (rw.go): holds their number, meta the
  -- first ARGV[1] of them by expiry, {token, ms left, metadata, ...}, from
  -- the reader set KEYS[1] .. ':r' and their metadata KEYS[1] .. ':rm'.
  kind, holds = 'shared', readers(KEYS[1] .. ':r', KEYS[1] .. ':rm', tonumber(ARGV[1]))
  meta = holds[2]
  holds = holds[1]
elseif t == 'string' then
  local v = redis.call('GET', KEYS[1])
  local dot = string.find(v, '.', 1, true)
  kind, holder, holds = 'plain', dot and string.sub(v, 1, dot - 1) or v, 1
  meta, term = holderMeta(redis.pcall('GET', KEYS[5]), holder)
elseif t == 'hash' and redis.call('HEXISTS', KEYS[1], 'rl-owner') == 1 then
  kind = 'reentrant'
  holder = redis.call('HGET', KEYS[1], 'rl-owner')
  meta = redis.call('HGET', KEYS[1], 'rl-meta') or ''
  holds = math.max(redis.call('HLEN', KEYS[1]) - 4, 0)
end
local counter = ''
if redis.call('TYPE', KEYS[2])['ok'] == 'string' then
  counter = redis.call('GET', KEYS[2])
end
local out = {kind, holder, meta, redis.call('PTTL', KEYS[1]), holds, counter, term, 0, 0}
if redis.call('TYPE', KEYS[3])['ok'] ~= 'zset' or redis.call('TYPE', KEYS[4])['ok'] ~= 'zset' then
  return out
end
local tm = redis.call('TIME')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
-- The expiries sorted: the dead entries (expiry <= now) come first.
local last = redis.call('ZRANGE', KEYS[4], -1, -1)[1]
local total = last and redis.call('ZRANK', KEYS[4], last) + 1 or 0
local firstLive = redis.call('ZRANGEBYSCORE', KEYS[4], '(' .. now, '+inf', 'LIMIT', 0, 1)[1]
local dead = firstLive and redis.call('ZRANK', KEYS[4], firstLive) or total
local depth = total - dead
local max, listed, from = tonumber(ARGV[1]), 0, 0
local mine = holder ~= '' and holder .. ':'
-- Read the queue in order until max live entries are listed; at most
-- 10 * max + 100 entries, so that dead ones cannot make it long.
while listed < max and from < 10 * max + 100 do
  local batch = redis.call('ZRANGE', KEYS[3], from, from + max, 'WITHSCORES')
  if #batch == 0 then
    break
  end
  from = from + #batch / 2
  for i = 1, #batch, 2 do
    local r = redis.call('ZRANK', KEYS[4], batch[i])
    if r and r >= dead then
      if mine and string.sub(batch[i], 1, #mine) == mine then
        depth, mine = depth - 1, false
      elseif listed < max then
        out[#out + 1] = batch[i]
        out[#out + 1] = batch[i + 1]
        listed = listed + 1
      end
    end
  end
end
out[8], out[9] = now, depth
return out
