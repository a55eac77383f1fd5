-- Release a set of names on one node (multi.go): the common case, before
-- the lock's release.lua runs for each key in turn (eachKeyScript).
-- KEYS[1..k] the lock keys; ARGV[1] the call's prefix "<token>.".
-- When every key holds a value of the call and no name has a queue or a
-- barging waiter's mark, the keys go in one DEL and nobody is told, as in
-- release.lua's common case for one name. Returns k then.
local all = true
for i = 1, #KEYS do
  local cur = redis.pcall('GET', KEYS[i])
  if type(cur) ~= 'string' or string.sub(cur, 1, #ARGV[1]) ~= ARGV[1] then
    all = false
    break
  end
end
if all then
  local waits = {}
  for i = 1, #KEYS do
    waits[2 * i - 1], waits[2 * i] = KEYS[i] .. ':q', KEYS[i] .. ':b'
  end
  if redis.call('EXISTS', unpack(waits)) == 0 then
    redis.call('DEL', unpack(KEYS))
    return #KEYS
  end
end
