-- Fenced access to a downstream Redis (RedisGuard): check the fence, record
-- it and do the access, atomically.
-- KEYS[1] fence record key of the resource; KEYS[2] data key (absent for
-- 'highest').
-- ARGV[1] operation: 'set', 'get' or 'highest'; ARGV[2] fence as a decimal
-- string without leading zeros; ARGV[3] value for 'set'.
-- Fences are compared as decimal strings (length first), so values past
-- 2^53 compare exactly.
-- Returns {1} after a set, {1, value} after a get, {2} after a get of a
-- missing key, {0, highest} when the fence is below the highest recorded
-- (nothing changed), {1, highest} for 'highest'.
-- Every check comes first, so an error changes nothing.
local function fence_of(key)
  local t = redis.call('TYPE', key)['ok']
  if t ~= 'none' and t ~= 'string' then
    return nil, redis.error_reply('WRONGTYPE fence key ' .. key .. ' holds a ' .. t ..
      ', not a fence: delete it, or keep other data out of redlock-fence:* keys')
  end
  local cur = redis.call('GET', key)
  if cur == false then
    return '0'
  end
  if not (cur == '0' or string.match(cur, '^[1-9]%d*$')) or #cur > 20 then
    return nil, redis.error_reply('WRONGTYPE fence key ' .. key .. ' holds "' .. cur ..
      '", not a fence: delete it, or keep other data out of redlock-fence:* keys')
  end
  return cur
end

local cur, err = fence_of(KEYS[1])
if err then
  return err
end
local op = ARGV[1]
if op == 'highest' then
  return {1, cur}
end

local t = redis.call('TYPE', KEYS[2])['ok']
if t ~= 'none' and t ~= 'string' then
  return redis.error_reply('WRONGTYPE data key ' .. KEYS[2] .. ' holds a ' .. t ..
    ', not a string: the guard reads and writes strings only; use another key')
end

local f = ARGV[2]
if #f < #cur or (#f == #cur and f < cur) then
  return {0, cur}
end
if f ~= cur then
  redis.call('SET', KEYS[1], f)
end
if op == 'set' then
  redis.call('SET', KEYS[2], ARGV[3])
  return {1}
end
local v = redis.call('GET', KEYS[2])
if v == false then
  return {2}
end
return {1, v}
