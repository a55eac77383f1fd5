-- The rest of rw_shared_release.lua, after handon.lua: somebody queues, or
-- a barging waiter marked the key.
-- A release takes the call's entries out of the queue too: a reader that
-- won on a quorum may have queued on the other nodes, and its entry there
-- would keep a writer waiting behind it until it expired. Then a key the
-- readers' part freed goes to the queue's head (handOn: a writer is
-- granted it, a reader told), or is announced when nobody takes it.
local head = ''
if isQueue(q, qt) then
  if release then
    dropEntries(q, qt, string.sub(ARGV[1], 1, -2) .. ':')
  end
  if freed then
    head = handOn(KEYS[1], q, qt, KEYS[1] .. ':fence', channel)
  end
end
if announce and head == '' then
  redis.call('PUBLISH', channel, '')
end
return n
