-- The rest of cleanup.lua, after handon.lua: somebody queues.
if isQueue(q, qt) then
  handOn(KEYS[1], q, qt, KEYS[1] .. ':fence', channel)
end
return 1
