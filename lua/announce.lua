-- Announce a new leader of an election (election.go): record its term with
-- its value, and tell the observers.
-- KEYS[1] the lock key; KEYS[2] its meta key; ARGV[1] the value the
-- leader's lease won, "<token>.<w>" (or "<token>.0"), which it matches as
-- extend.lua does: that value or the call's grant "<token>.0"; ARGV[2]
-- the election's channel; ARGV[3] the notice, "<term> <value>"; ARGV[4] the
-- meta key's new text, "<token>#<term>:<value>", the term being the
-- leader's fence. This script is the only writer of that form (the acquire
-- script writes "<token>:<metadata>"), so that the term readers see
-- (holder_meta.lua) is one a Campaign recorded, never one a client wrote.
-- Only while the node holds the key for that leader, so that a leader whose
-- announce comes after its loss never announces itself over its successor:
-- the meta key is rewritten with the lock key's expiry (the watchdog's
-- extends move both), then the notice published. A refused PUBLISH (an ACL
-- without the channel) leaves the term recorded.
-- Returns the number of subscribers the notice reached, or -1 when the node
-- does not hold the key for the leader.
local cur = redis.pcall('GET', KEYS[1])
if type(cur) ~= 'string' then
  return -1
end
if cur ~= ARGV[1] then
  local dot = string.find(ARGV[1], '.', 1, true)
  if not dot or cur ~= string.sub(ARGV[1], 1, dot) .. '0' then
    return -1
  end
end
local pttl = redis.call('PTTL', KEYS[1])
if pttl > 0 then
  redis.call('SET', KEYS[2], ARGV[4], 'PX', pttl)
end
local n = redis.pcall('PUBLISH', ARGV[2], ARGV[3])
if type(n) ~= 'number' then
  return 0
end
return n
