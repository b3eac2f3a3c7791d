//! The two Lua scripts the bus runs. Each is atomic on the Redis server, which is what makes
//! versions contiguous (see [`crate::cursor`]) and a consumer's starting point exact.

use std::sync::LazyLock;

/// `KEYS[1]` stream, `KEYS[2]` version counter, `ARGV[1]` encoded envelope, `ARGV[2]` max len.
/// Assigns the next version and appends the entry in one step; returns the version.
pub(crate) static PUBLISH: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(
        r"
local v = redis.call('INCR', KEYS[2])
redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], '*', 'v', v, 'e', ARGV[1])
return v
",
    )
});

/// `KEYS[1]` stream, `KEYS[2]` version counter. Returns `{version, last-generated-id}` read
/// together, so a consumer starting there sees every later entry and knows its version.
/// The last *generated* id (not the last entry's) survives `XTRIM MAXLEN 0`.
pub(crate) static BASELINE: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(
        r"
local v = tonumber(redis.call('GET', KEYS[2]) or '0')
if redis.call('EXISTS', KEYS[1]) == 0 then return {v, '0-0'} end
local info = redis.call('XINFO', 'STREAM', KEYS[1])
for i = 1, #info, 2 do
  if info[i] == 'last-generated-id' then return {v, info[i + 1]} end
end
return {v, '0-0'}
",
    )
});
