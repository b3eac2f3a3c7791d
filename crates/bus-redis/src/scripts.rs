//! The two Lua scripts the bus runs. Each is atomic on the Redis server, which is what makes
//! versions contiguous within an epoch (see [`crate::cursor`]) and a consumer's starting point
//! exact.
//!
//! Both begin by settling the **epoch**: the record at `KEYS[3]` holds the current epoch and
//! the replication id (`master_replid`) of the primary that started it. A new epoch begins —
//! `ARGV[1]`, a random candidate from the caller, becomes it — when
//! - the record is missing (first use, a restart without persistence, a `FLUSHDB`),
//! - the primary's replication id differs from the recorded one (a replica was promoted:
//!   whatever the old primary acknowledged but had not replicated is gone), or
//! - the version counter is missing while the record exists (someone deleted it).
//!
//! Epoch creation also creates the counter (at 0, or keeping its replicated value), so the
//! last rule never fires by accident. A script run on a replica fails with a `READONLY` error,
//! which the callers treat as "reconnect to the primary".
//!
//! Keys: `KEYS[1]` stream, `KEYS[2]` version counter, `KEYS[3]` epoch record — all in one
//! hash slot (see [`crate::RedisBusOptions::version_key`]).
//!
//! Two more keep the fleet's membership in one hash (`<stream slot>:members`): each field is a
//! node, its value the announced payload and an expiry on Redis's own clock, so nodes with
//! skewed clocks agree on who is alive.
//!
//! The keyspace scripts (see `crate::keyspace`) write one record — a hash `{v: value, r:
//! revision}` at `KEYS[1]` — taking its revision from the keyspace's counter at `KEYS[2]` and
//! setting `PEXPIRE ARGV[1]` (the TTL in ms), all in one step: Redis expires the key on its own
//! clock, and a record is never seen without its revision or TTL. Two more keep a keyspace's
//! slot sets: a sorted set scored by each slot's expiry on Redis's clock, pruned, counted and
//! changed in one step.

use std::sync::LazyLock;

/// The shared prologue: `settle_epoch()` returns the current epoch, starting a new one when
/// history was lost.
const SETTLE_EPOCH: &str = r"
local function settle_epoch()
  local info = redis.call('INFO', 'replication')
  if not string.find(info, 'role:master', 1, true) then
    return redis.error_reply('READONLY mcp-fleet bus: this server is not the primary')
  end
  local replid = string.match(info, 'master_replid:(%w+)')
  local record = redis.call('HMGET', KEYS[3], 'epoch', 'replid')
  local counted = redis.call('EXISTS', KEYS[2]) == 1
  if record[1] and record[2] == replid and counted then
    return tonumber(record[1])
  end
  redis.call('HSET', KEYS[3], 'epoch', ARGV[1], 'replid', replid)
  redis.call('SET', KEYS[2], '0', 'NX')
  return tonumber(ARGV[1])
end
";

/// `ARGV[1]` candidate epoch, `ARGV[2]` encoded envelope, `ARGV[3]` max len. Settles the
/// epoch, assigns the next version and appends the entry in one step; returns
/// `{epoch, version}`.
pub(crate) static PUBLISH: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(&format!(
        r"{SETTLE_EPOCH}
local epoch = settle_epoch()
if type(epoch) == 'table' then return epoch end
local v = redis.call('INCR', KEYS[2])
redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[3], '*', 'v', v, 'ep', epoch, 'e', ARGV[2])
return {{epoch, v}}
"
    ))
});

/// `ARGV[1]` candidate epoch. Returns `{epoch, version, last-generated-id, first-version}`
/// read together, so a consumer starting there sees every later entry and knows where it
/// stands. The last *generated* id (not the last entry's) survives `XTRIM MAXLEN 0`. The first
/// version is that of the oldest entry still stored (`version + 1` when none is): a consumer
/// whose next version is below it lost entries to trimming.
pub(crate) static BASELINE: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(&format!(
        r"{SETTLE_EPOCH}
local epoch = settle_epoch()
if type(epoch) == 'table' then return epoch end
local v = tonumber(redis.call('GET', KEYS[2]) or '0')
if redis.call('EXISTS', KEYS[1]) == 0 then return {{epoch, v, '0-0', v + 1}} end
local info = redis.call('XINFO', 'STREAM', KEYS[1])
local last_id, first = '0-0', v + 1
for i = 1, #info, 2 do
  if info[i] == 'last-generated-id' then last_id = info[i + 1] end
  if info[i] == 'first-entry' and info[i + 1] then
    local fields = info[i + 1][2]
    for j = 1, #fields, 2 do
      if fields[j] == 'v' then first = tonumber(fields[j + 1]) end
    end
  end
end
return {{epoch, v, last_id, first}}
"
    ))
});

/// Redis's own clock in milliseconds (every node reads the same clock: no skew between nodes).
const NOW_MS: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
";

/// `KEYS[1]` members hash, `ARGV[1]` node id, `ARGV[2]` payload, `ARGV[3]` TTL in ms. Stores
/// `{exp, p}` under the node's field, the expiry on Redis's clock.
pub(crate) static ANNOUNCE: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(&format!(
        r"{NOW_MS}
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode({{exp = now + tonumber(ARGV[3]), p = ARGV[2]}}))
return 1
"
    ))
});

/// `KEYS[1]` members hash. Returns `[node, payload, ms left, …]` for the live members and
/// deletes the expired (or unreadable) ones.
pub(crate) static MEMBERS: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(&format!(
        r"{NOW_MS}
local all = redis.call('HGETALL', KEYS[1])
local out = {{}}
for i = 1, #all, 2 do
  local ok, rec = pcall(cjson.decode, all[i + 1])
  local exp = ok and type(rec) == 'table' and tonumber(rec.exp)
  if exp and exp > now and type(rec.p) == 'string' then
    table.insert(out, all[i])
    table.insert(out, rec.p)
    table.insert(out, exp - now)
  else
    redis.call('HDEL', KEYS[1], all[i])
  end
end
return out
"
    ))
});

/// The keyspace prologue: `store(value)` writes `KEYS[1]` with the next revision of `KEYS[2]`
/// and the TTL `ARGV[1]`, and returns the revision.
const STORE: &str = r"
local function store(value)
  local r = redis.call('INCR', KEYS[2])
  redis.call('HSET', KEYS[1], 'v', value, 'r', r)
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  return r
end
";

/// `ARGV[2]` value. Stores it only if `KEYS[1]` is absent (Redis has already dropped it if it
/// expired); returns the revision, or nil.
pub(crate) static KS_CREATE: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(&format!(
        r"{STORE}
if redis.call('EXISTS', KEYS[1]) == 1 then return false end
return store(ARGV[2])
"
    ))
});

/// `ARGV[2]` value. Stores it whatever was there; returns the revision.
pub(crate) static KS_PUT: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(&format!(
        r"{STORE}
return store(ARGV[2])
"
    ))
});

/// `ARGV[2]` value, `ARGV[3]` expected revision. Stores it only while the record's revision is
/// the expected one; returns the new revision, or nil.
pub(crate) static KS_COMPARE_AND_SET: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(&format!(
        r"{STORE}
if redis.call('HGET', KEYS[1], 'r') ~= ARGV[3] then return false end
return store(ARGV[2])
"
    ))
});

/// `ARGV[2]` delta. Adds it to the counter in field `v` (absent counts as 0; a value that is no
/// integer, or an overflow, fails before anything is written), takes the next revision and
/// renews the TTL. Returns the new value as a string: Lua numbers are doubles, which would
/// round counters beyond 2^53.
pub(crate) static KS_INCREMENT: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(
        r"
redis.call('HINCRBY', KEYS[1], 'v', ARGV[2])
redis.call('HSET', KEYS[1], 'r', redis.call('INCR', KEYS[2]))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return redis.call('HGET', KEYS[1], 'v')
",
    )
});

/// `KEYS[1]` a slot set (a sorted set scored by expiry, ms on Redis's clock), `ARGV[1]` member,
/// `ARGV[2]` its TTL in ms, `ARGV[3]` the limit. Drops the expired members, then renews the
/// member if present, or adds it if fewer than the limit are live; the set expires with its
/// longest slot. Returns 1 if the member holds a slot now, 0 (nothing changed) if not.
pub(crate) static KS_HOLD_SLOT: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(&format!(
        r"{NOW_MS}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
  return 0
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[1], last[2])
return 1
"
    ))
});

/// `KEYS[1]` a slot set. Drops its expired slots; returns how many are live.
pub(crate) static KS_LIVE_SLOTS: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(&format!(
        r"{NOW_MS}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
return redis.call('ZCARD', KEYS[1])
"
    ))
});

/// `KEYS[1]` a slot set, `ARGV[1]` member. Removes it; returns 1 if its slot was live.
pub(crate) static KS_RELEASE_SLOT: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(&format!(
        r"{NOW_MS}
local expiry = redis.call('ZSCORE', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[1], ARGV[1])
if expiry and tonumber(expiry) > now then return 1 end
return 0
"
    ))
});
