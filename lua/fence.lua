-- Fence write-back: raise the counter to at least F, never lower it.
-- KEYS[1] fence counter key; ARGV[1] F as a decimal string.
-- Counters are compared as decimal strings (length first), so values past
-- 2^53 compare exactly.
-- Returns 1.
local t = redis.call('TYPE', KEYS[1])['ok']
if t ~= 'none' and t ~= 'string' then
  return redis.error_reply('WRONGTYPE fence counter key ' .. KEYS[1] .. ' holds a ' .. t .. ', not a counter')
end
local cur = redis.call('GET', KEYS[1])
local f = ARGV[1]
if cur == false or #cur < #f or (#cur == #f and cur < f) then
  redis.call('SET', KEYS[1], f)
end
return 1
