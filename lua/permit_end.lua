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
if r == 1 or type(r) == 'string' and string.sub(r, 1, 2) == '1:' then
  local p = redis.call('PTTL', KEYS[1])
  local lp = redis.call('PTTL', limitKey)
  if p > 0 and (stale or lp ~= -1 and lp < p) then
    redis.call('SET', limitKey, limit, 'PX', p)
  end
end
return r
