-- Clean up after one failed acquisition attempt on one node: delete the key
-- only if it holds exactly that attempt's value. A delayed cleanup of
-- attempt k then never deletes the key of attempt k+1 of the same call.
-- Nobody waits for this key, so nobody is woken.
-- KEYS[1] lock key; ARGV[1] the attempt's value "<token>.<attempt>".
-- Returns 1 when deleted, 0 otherwise.
if redis.call('TYPE', KEYS[1])['ok'] ~= 'string' then
  return 0
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
