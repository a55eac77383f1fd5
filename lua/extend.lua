-- Extend the lock on one node, only if it holds the value the lease won.
-- KEYS[1] lock key; ARGV[1] the lease's value: "<token>.<w>", what attempt
-- w of the Acquire call wrote when it won, or "<token>.0", a release's grant
-- to the call when the lease came from the grants (grant.go); ARGV[2] ttl in
-- ms. The form's prelude (meta_none.lua, meta_key.lua) sets metaKey: a lock
-- with metadata extends its meta key with the lock key, to the same expiry
-- (never re-created).
-- The lease counts ARGV[1] and the call's grant "<token>.0" (an attempt
-- that met the grant kept it: acquire.lua), nothing else: another value of
-- the call, "<token>.<j>" of a failed attempt j, may be deleted at any time
-- by that attempt's exact cleanup (cleanup.lua), so a node holding it must
-- not count towards the lease (docs/design.md, "What a lease counts").
-- The key's expiry only ever moves later: a lease may have several shares
-- (a resumed handle, the sender's watchdog), and one share asking for less
-- must not cut short another's local deadline. A key that lives at least
-- ARGV[2] more already is left as it is.
-- Returns 1 when extended (or already living long enough), 0 when the key is
-- gone or holds another value. An expired key is never re-created here:
-- that would hide the gap.
local cur = redis.pcall('GET', KEYS[1])
if type(cur) ~= 'string' then
  return 0 -- no key (false), or not a string (an error reply): not ours
end
if cur ~= ARGV[1] then
  local dot = string.find(ARGV[1], '.', 1, true)
  if not dot or cur ~= string.sub(ARGV[1], 1, dot) .. '0' then
    return 0
  end
end
local pttl = redis.call('PTTL', KEYS[1])
if pttl >= tonumber(ARGV[2]) then
  return 1
end
if metaKey then
  redis.call('PEXPIRE', metaKey, ARGV[2])
end
return redis.call('PEXPIRE', KEYS[1], ARGV[2])
