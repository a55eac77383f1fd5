-- The end of a semaphore's acquire (permit.lua, acquire.lua) and extend
-- (permit_extend.lua, extend.lua) scripts: runs the slot's script, and
-- when the node now holds the slot for the caller, makes the limit key
-- name the caller's limit and live at least as long as the slot key. The
-- limit key's expiry only moves later: one permit never shortens it under
-- another (its rule is the limit's, not the slot's: it must outlive every
-- live slot on the node). A stale record (permit.lua: no live slot backed
-- it) is overwritten whatever its expiry.
end
local r = slot()
-- acquire.lua takes with an integer (its common case) or "1:<fence>";
-- extend.lua answers 1 when it extended, 0 when not.
local held = r == 1
local p -- the slot's PTTL, when it is known without asking
if taking then
  held = type(r) == 'number' or type(r) == 'string' and string.sub(r, 1, 2) == '1:'
  if type(r) == 'number' then
    -- acquire.lua's common case: this script SET the slot with PX ARGV[2],
    -- so its PTTL is at most that (the clock may have ticked since), and
    -- a record written from it outlives the slot all the same.
    p = tonumber(ARGV[2])
  end
end
if held then
  p = p or redis.call('PTTL', KEYS[1])
  if p > 0 then
    -- No record (fresh) or a stale one is written; a live one only made to
    -- live longer (one without expiry, PTTL -1, is left as it is).
    local write = stale or fresh
    if not write then
      local lp = redis.call('PTTL', limitKey)
      write = lp ~= -1 and lp <= p
    end
    if write then
      -- A ms longer than the slot's PTTL, which rounds its remaining time
      -- down: the record never expires before the slot it backs.
      redis.call('SET', limitKey, limit, 'PX', p + 1)
    end
  end
end
return r
