-- Mark a lock as waited for by a caller with no entry in its queue: an
-- election's observer (election_observe.go). KEYS[1] the mark, the lock
-- key .. ':b'; ARGV[1] its life in ms. It is the mark a refused barging
-- attempt writes (queue.lua's markBarger), with the same life (queueTTL),
-- so that neither caller's mark shortens the other's; while it lives the
-- lock's release announces itself though nobody queues (release.lua).
return redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
