-- Release the lock on one node, only if it still holds our token.
-- KEYS[1] lock key; ARGV[1] token; ARGV[2] channel to announce the release
-- on, to wake waiters, or "" for none (cleanup of a failed attempt).
-- Returns 1 when deleted, 0 when the key is gone or holds another token.
if redis.call('TYPE', KEYS[1])['ok'] ~= 'string' then
  return 0
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  if ARGV[2] ~= '' then
    redis.call('PUBLISH', ARGV[2], '')
  end
  return 1
end
return 0
