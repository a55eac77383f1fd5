-- The plain lock's prelude to acquire.lua (form.go): its fence counter
-- beside its key, no metadata.
local fenceKey, metaKey, metaText = KEYS[1] .. ':fence', nil, nil
local bargeMark = true -- a refused barging attempt marks the key (queue.lua's markBarger)
