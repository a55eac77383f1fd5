-- holderMeta (a fragment: inspect.lua and force_release.lua start with it)
-- reads the text m of a plain lock's meta key for holder, the token that
-- holds the lock key: "<token>:<metadata>" as the acquire script writes it,
-- or "<token>#<term>:<value>" once an election's announce (announce.lua)
-- has recorded its leader's term. No metadata can make the second form: a
-- token is base64 (no ':', no '#'), and the acquire script writes ':' right
-- after it. Returns the metadata (the value) and the term, '' when none;
-- both '' when m is not holder's.
local function holderMeta(m, holder)
  if type(m) ~= 'string' or string.sub(m, 1, #holder) ~= holder then
    return '', ''
  end
  local mark = string.sub(m, #holder + 1, #holder + 1)
  if mark == ':' then
    return string.sub(m, #holder + 2), ''
  elseif mark == '#' then
    local term, value = string.match(string.sub(m, #holder + 2), '^(%d+):(.*)$')
    if term then
      return value, term
    end
  end
  return '', ''
end
