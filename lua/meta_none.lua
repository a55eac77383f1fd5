-- The prelude to extend.lua, release.lua and cleanup.lua of a form
-- without metadata (form.go).
local metaKey = nil
