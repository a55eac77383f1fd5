-- The fence counter's helpers, a fragment of the acquire scripts
-- (acquire.lua's cases past the common one, acquire_hold.lua), not a script
-- of its own. It expects fenceKey (the counter), fenced (a fence is taken)
-- and incr (an INCR reply the script got already, or nil).
-- badCounter returns the error for a fence counter that INCR would refuse
-- or take below 1, or false.
local function badCounter()
  local c = redis.pcall('GET', fenceKey)
  if type(c) == 'table' then
    return redis.error_reply('WRONGTYPE fence counter key ' .. fenceKey .. ' holds a ' ..
      redis.call('TYPE', fenceKey)['ok'] .. ', not a counter')
  end
  if c ~= false then
    local decimal = c == '0' or string.match(c, '^[1-9]%d*$')
    if not decimal or #c > 19 or (#c == 19 and c >= '9223372036854775807') then
      return redis.error_reply('BADCOUNTER fence counter ' .. fenceKey .. ' holds "' .. string.sub(c, 1, 32) ..
        '", not a decimal counter below 2^63-1')
    end
  end
  return false
end
-- fence increments the counter (or takes the INCR reply incr) and returns
-- it as a decimal string, exact: INCR's reply passes through a Lua number,
-- exact below 2^53; above, the counter is read back as a string. A counter
-- INCR refuses, or takes below 1 (set back at once), returns false and the
-- error reply instead. Without fencing it returns "0".
local function fence()
  if not fenced then
    return '0'
  end
  local n = incr or redis.pcall('INCR', fenceKey)
  if type(n) == 'table' or n < 1 then
    if type(n) == 'number' then
      -- Set it back with the commands a lock user may call (no DECR): one
      -- less, in decimal, exact whatever its size, and its TTL if it had one.
      local m = redis.call('GET', fenceKey) -- "0" or "-<digits>"
      local back = '-1'
      if m ~= '0' then
        local k = string.sub(m, 2)
        local i = #k
        while i > 0 and string.sub(k, i, i) == '9' do
          i = i - 1
        end
        local head = '1'
        if i > 0 then
          head = string.sub(k, 1, i - 1) .. string.char(string.byte(k, i) + 1)
        end
        back = '-' .. head .. string.rep('0', #k - i)
      end
      local ttl = redis.call('PTTL', fenceKey)
      redis.call('SET', fenceKey, back)
      if ttl > 0 then
        redis.call('PEXPIRE', fenceKey, ttl)
      end
    end
    return false, badCounter() or n
  end
  if n < 9007199254740992 then
    return string.format('%.0f', n)
  end
  return redis.call('GET', fenceKey)
end
