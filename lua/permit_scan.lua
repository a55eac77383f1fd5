-- Read a semaphore's slots on one node (permit.go), changing nothing.
-- KEYS[1] .. KEYS[#KEYS-1] the slots' lock keys, in slot order; KEYS[#KEYS]
-- the semaphore's limit key.
-- Returns an array: the limit in force on the node, that is the limit
-- key's value when a live slot backs it (a slot below that limit; see
-- permit.lua), else ''; then, per slot, its key's remaining TTL in ms
-- (PTTL: -2 when the slot is free).
local limitKey = KEYS[#KEYS]
local had = redis.call('GET', limitKey) or ''
if had ~= '' then
  local base = string.sub(limitKey, 1, #limitKey - #':permits:limit') .. ':permit:'
  local slots = {}
  for i = 0, math.min(math.floor(tonumber(had) or 0), 1024) - 1 do
    slots[#slots + 1] = base .. i
  end
  if #slots == 0 or redis.call('EXISTS', unpack(slots)) == 0 then
    had = ''
  end
end
local r = {had}
for i = 1, #KEYS - 1 do
  r[i + 1] = redis.call('PTTL', KEYS[i])
end
return r
