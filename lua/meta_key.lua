-- The prelude to extend.lua, release.lua and cleanup.lua of a form with
-- metadata (form.go): the meta key beside the lock key, which expires and
-- goes with it.
local metaKey = KEYS[1] .. ':meta'
