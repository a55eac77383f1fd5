-- Release a set of names on one node (multi.go): the common case, before
-- the lock's release.lua runs for each key in turn (eachKeyScript).
-- KEYS[1..k] the lock keys; ARGV[1] the call's prefix "<token>.".
-- When every key holds a value of the call and no name has a queue, the
-- keys go in one DEL and each name's release is announced on its channel,
-- as release.lua's common case does for one name. Returns k then.
local all = true
for i = 1, #KEYS do
  local cur = redis.pcall('GET', KEYS[i])
  if type(cur) ~= 'string' or string.sub(cur, 1, #ARGV[1]) ~= ARGV[1] then
    all = false
    break
  end
end
if all then
  local qs = {}
  for i = 1, #KEYS do
    qs[i] = KEYS[i] .. ':q'
  end
  if redis.call('EXISTS', unpack(qs)) == 0 then
    redis.call('DEL', unpack(KEYS))
    for i = 1, #KEYS do
      redis.call('PUBLISH', string.match(KEYS[i], '^(.-){') .. 'released:' .. KEYS[i], '')
    end
    return #KEYS
  end
end
