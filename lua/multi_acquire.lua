-- Acquire a set of names on one node, all or nothing, for one attempt of
-- one AcquireMulti call (multi.go): the common case. The script is this
-- file, then counter.lua, queue.lua and multi_acquire_rest.lua (scripts.go).
-- KEYS[1..k] the lock keys of the set's names, sorted; name i's queue is
-- KEYS[i] .. ':q' and ':qt', its fence counter KEYS[i] .. ':fence' (each in
-- its own slot: a standalone node takes keys of any slots in one script).
-- ARGV as acquire.lua's: [1] this attempt's value "<token>.<attempt>" (a
-- set's token ends in "~<k>", so it never equals a single lock's value);
-- [2] the TTL in ms; [3] "1" to take a fence on every name; [4] the mode
-- ("wait", "try", "barge"); in "wait" mode [5] the call's entry, [6] its
-- priority, [7] how long the entry lives in ms.
-- Every key is taken when every key is free (or holds an earlier attempt's
-- value of the same call) and, unless barging, the call comes first in
-- every name's queue that has anyone in it ("try": every queue is empty);
-- otherwise nothing is written but the call's entry, in every name's queue
-- ("wait" mode), and the refusal is returned.
-- Returns "1:<f1>,...,<fk>", each name's counter after its INCR (in KEYS'
-- order; "0" without fencing); or "0:<pttl>" when refused, pttl being the
-- longest TTL of a taken key (0: the keys are free but promised to another
-- waiter), followed in "wait" mode by ":<rank>", the call's largest rank
-- in its names' queues: 0 only when it is the head of every one, so that a
-- set refused a free key promised to another waiter is behind (it polls
-- calmly, queue.go) and never "the head of a free key" (which retries at
-- once).
-- Errors (WRONGTYPE, BADCOUNTER) come before anything is written.
local v, fenced, k = ARGV[1], ARGV[3] == '1', #KEYS
-- The common case, before any helper is made: no key and nobody queues
-- (one EXISTS over every lock and queue key); take them all.
local probe = {}
for i = 1, k do
  probe[#probe + 1] = KEYS[i]
  if ARGV[4] ~= 'barge' then
    probe[#probe + 1] = KEYS[i] .. ':q'
  end
end
local fences, bad = {}, nil
if redis.call('EXISTS', unpack(probe)) == 0 then
  for i = 1, k do
    redis.call('SET', KEYS[i], v, 'PX', ARGV[2])
    fences[i] = '0'
    if fenced then
      local n = redis.pcall('INCR', KEYS[i] .. ':fence')
      if type(n) == 'number' and n >= 1 and n < 9007199254740992 then
        fences[i] = string.format('%.0f', n)
      else
        bad = {i, n}
        break
      end
    end
  end
  if not bad then
    return '1:' .. table.concat(fences, ',')
  end
end
-- Past the common case (counter.lua, queue.lua, then multi_acquire_rest.lua).
local fenceKey, incr, queueKey, queueTimesKey
local bargeMark = true -- a refused barging attempt marks the keys held (queue.lua's markBarger)
local queueExists = false
