-- Read a semaphore's slots on one node (permit.go), changing nothing.
-- KEYS[1] .. KEYS[#KEYS-1] the slots' lock keys, in slot order; KEYS[#KEYS]
-- the semaphore's limit key.
-- Returns an array: the limit key's value ('' when it has none), then, per
-- slot, its key's remaining TTL in ms (PTTL: -2 when the slot is free).
local r = {redis.call('GET', KEYS[#KEYS]) or ''}
for i = 1, #KEYS - 1 do
  r[i + 1] = redis.call('PTTL', KEYS[i])
end
return r
