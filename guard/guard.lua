-- Fenced access to a downstream Redis (guard.Redis): check the fence and its
-- owner, record them and do the access, atomically.
-- KEYS[1] fence record key of the resource; KEYS[2] data key (absent for
-- 'highest').
-- ARGV[1] operation: 'set', 'get' or 'highest'; ARGV[2] fence as a decimal
-- string without leading zeros, not 0; ARGV[3] owner id of the holder
-- (lowercase hex); ARGV[4] value for 'set'.
-- The fence key holds "<fence>:<owner>"; a plain "<fence>" (written by
-- older versions) reads as owner "". An access is accepted iff its fence is
-- above the recorded one, or equal to it with the same owner.
-- Fences are compared as decimal strings (length first), so values past
-- 2^53 compare exactly.
-- Returns {1} after a set, {1, value} after a get, {2} after a get of a
-- missing key, {0, highest} when the fence is below the highest recorded,
-- {3, highest} when it equals the highest recorded but another owner's
-- (nothing changed in both cases), {1, highest} for 'highest'.
-- Every check comes first, so an error changes nothing.
local function bad_fence_key(key, what)
  return redis.error_reply('WRONGTYPE fence key ' .. key .. ' holds ' .. what ..
    ', not a fence: delete it, or keep other data out of redlock-fence:* keys')
end

-- fence_of returns the recorded fence and owner of the resource.
local function fence_of(key)
  local t = redis.call('TYPE', key)['ok']
  if t ~= 'none' and t ~= 'string' then
    return nil, nil, bad_fence_key(key, 'a ' .. t)
  end
  local cur = redis.call('GET', key)
  if cur == false then
    return '0', ''
  end
  local f, owner = string.match(cur, '^(%d+):([0-9a-f]*)$')
  if f == nil then
    f, owner = cur, ''
  end
  if not (f == '0' or string.match(f, '^[1-9]%d*$')) or #f > 20 or #owner > 64 then
    return nil, nil, bad_fence_key(key, '"' .. cur .. '"')
  end
  return f, owner
end

local cur, cur_owner, err = fence_of(KEYS[1])
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

local f, owner = ARGV[2], ARGV[3]
if #f < #cur or (#f == #cur and f < cur) then
  return {0, cur}
end
if f == cur and owner ~= cur_owner then
  return {3, cur}
end
if f ~= cur then
  redis.call('SET', KEYS[1], f .. ':' .. owner)
end
if op == 'set' then
  redis.call('SET', KEYS[2], ARGV[4])
  return {1}
end
local v = redis.call('GET', KEYS[2])
if v == false then
  return {2}
end
return {1, v}
