-- Announce a new leader to the observers of an election (election.go).
-- KEYS[1] the lock key; ARGV[1] the leader's prefix "<token>." (matches the
-- value of every attempt of its Campaign); ARGV[2] the election's channel;
-- ARGV[3] the notice, "<term> <value>".
-- Publishes only while the node holds the key for that leader, so that a
-- leader whose announce comes after its loss never announces itself over
-- its successor.
-- Returns the number of subscribers the notice reached, or -1 when the node
-- does not hold the key for the leader.
local cur = redis.pcall('GET', KEYS[1])
if type(cur) ~= 'string' or string.sub(cur, 1, #ARGV[1]) ~= ARGV[1] then
  return -1
end
return redis.call('PUBLISH', ARGV[2], ARGV[3])
