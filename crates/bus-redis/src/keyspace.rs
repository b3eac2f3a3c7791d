//! [`RedisKeyspace`]: the [`Keyspace`] of a [`RedisBus`] — one hash `{v: value, r: revision}`
//! per key at `<stream slot>:ks:<name>:<key>` with `PEXPIRE` = the TTL, revisions from `INCR`
//! on `<stream slot>:ks:<name>:#rev` (see [`RedisBusOptions::keyspace_prefix`]) — and one sorted
//! set per slot set at `<stream slot>:ks:<name>:#slots.<key>`, scored by each slot's expiry.
//!
//! - Every write (create, put, compare-and-set, increment) is one Lua script (see
//!   `crate::scripts`), so value, revision and TTL change together; a delete is one `DEL`, a
//!   read one `HMGET`. Expiry is Redis's own, on its clock, exact to the millisecond: an expired
//!   key is gone for every command.
//! - The revision counter never expires, so revisions keep increasing across deletes and
//!   expiries: a stale revision never compare-and-sets a key created anew. (`FLUSHDB`, or an
//!   eviction policy that evicts keys without a TTL, would reset it.)
//! - Every key of the keyspace shares the stream key's hash slot, so the scripts run on one
//!   shard of a cluster; the commands run on the bus's publishing connection, with its timeout
//!   and its failover handling. Writes whose repetition would change their effect or answer
//!   are not retried after a lost reply (see [`Retry`]).
//!
//! [`RedisBusOptions::keyspace_prefix`]: crate::RedisBusOptions::keyspace_prefix

use std::time::Duration;

use mcp_fleet_bus::{BoxFuture, BusError, Keyspace, Record};
use mcp_fleet_bus::{check_key, check_slot};
use redis::{FromRedisValue, Script, ScriptInvocation};

use crate::RedisBus;
use crate::publisher::Retry;
use crate::scripts;

/// One keyspace on a [`RedisBus`].
pub(crate) struct RedisKeyspace {
    bus: RedisBus,
    /// `<stream slot>:ks:<name>:`
    prefix: String,
    /// The revision counter, `<prefix>#rev`.
    revision_key: String,
    ttl: Duration,
    /// The TTL as `PEXPIRE` takes it (`check_open` caps it at a year).
    ttl_ms: u64,
}

impl RedisKeyspace {
    /// The keyspace `name` (already checked) on `bus`; nothing is sent until it is used.
    pub(crate) fn new(bus: RedisBus, name: &str, ttl: Duration) -> Self {
        let prefix = bus.options().keyspace_prefix(name);
        let revision_key = format!("{prefix}#rev");
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        RedisKeyspace { bus, prefix, revision_key, ttl, ttl_ms }
    }

    /// The sorted set holding the slot set `key` (beside the records, in their hash slot).
    fn slot_set(&self, key: &str) -> String {
        format!("{}#slots.{key}", self.prefix)
    }

    /// The Redis key of `key`, or [`BusError::Config`] if `key` is invalid.
    fn record_key(&self, key: &str) -> Result<String, BusError> {
        check_key(key)?;
        Ok(format!("{}{key}", self.prefix))
    }

    /// Run the write `script` on `key` — `KEYS` the record and the revision counter, `ARGV[1]`
    /// the TTL in ms, then what `args` adds — not repeated after a lost reply unless `retry`.
    async fn write<T: FromRedisValue>(
        &self,
        script: &Script,
        key: &str,
        retry: Retry,
        args: impl Fn(&mut ScriptInvocation<'_>),
    ) -> Result<T, BusError> {
        let record = self.record_key(key)?;
        self.bus
            .run(retry, |mut conn| {
                let mut call = script.prepare_invoke();
                call.key(&record).key(&self.revision_key).arg(self.ttl_ms);
                args(&mut call);
                async move { call.invoke_async::<T>(&mut conn).await }
            })
            .await
    }
}

impl Keyspace for RedisKeyspace {
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Record>, BusError>> {
        Box::pin(async move {
            let record = self.record_key(key)?;
            let (value, revision): (Option<Vec<u8>>, Option<u64>) = self
                .bus
                .run(Retry::Always, |mut conn| {
                    let cmd = redis::cmd("HMGET").arg(&record).arg("v").arg("r").clone();
                    async move { cmd.query_async(&mut conn).await }
                })
                .await?;
            Ok(value.zip(revision).map(|(value, revision)| Record { value, revision }))
        })
    }

    fn create<'a>(&'a self, key: &'a str, value: Vec<u8>) -> BoxFuture<'a, Result<Option<u64>, BusError>> {
        Box::pin(async move {
            self.write(&scripts::KS_CREATE, key, Retry::UnlessSent, |call| {
                call.arg(&value[..]);
            })
            .await
        })
    }

    fn put<'a>(&'a self, key: &'a str, value: Vec<u8>) -> BoxFuture<'a, Result<u64, BusError>> {
        // Putting the same value twice leaves what putting it once does (a later revision).
        Box::pin(async move {
            self.write(&scripts::KS_PUT, key, Retry::Always, |call| {
                call.arg(&value[..]);
            })
            .await
        })
    }

    fn compare_and_set<'a>(
        &'a self,
        key: &'a str,
        expected: u64,
        value: Vec<u8>,
    ) -> BoxFuture<'a, Result<Option<u64>, BusError>> {
        Box::pin(async move {
            self.write(&scripts::KS_COMPARE_AND_SET, key, Retry::UnlessSent, |call| {
                call.arg(&value[..]).arg(expected);
            })
            .await
        })
    }

    fn delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<bool, BusError>> {
        Box::pin(async move {
            let record = self.record_key(key)?;
            let removed: i64 = self
                .bus
                .run(Retry::UnlessSent, |mut conn| {
                    let cmd = redis::cmd("DEL").arg(&record).clone();
                    async move { cmd.query_async(&mut conn).await }
                })
                .await?;
            Ok(removed == 1)
        })
    }

    fn increment<'a>(&'a self, key: &'a str, delta: i64) -> BoxFuture<'a, Result<i64, BusError>> {
        Box::pin(async move {
            self.write(&scripts::KS_INCREMENT, key, Retry::UnlessSent, |call| {
                call.arg(delta);
            })
            .await
        })
    }

    fn hold_slot<'a>(
        &'a self,
        key: &'a str,
        member: &'a str,
        ttl: Duration,
        limit: usize,
    ) -> BoxFuture<'a, Result<bool, BusError>> {
        Box::pin(async move {
            check_slot(key, member, ttl, self.ttl)?;
            let set = self.slot_set(key);
            let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
            // Holding a slot twice leaves what holding it once does (a later expiry); a lost
            // reply is repeated, and the repetition answers the same.
            let held: i64 = self
                .bus
                .run(Retry::Always, |mut conn| {
                    let mut call = scripts::KS_HOLD_SLOT.prepare_invoke();
                    call.key(&set).arg(member).arg(ttl_ms).arg(limit);
                    async move { call.invoke_async(&mut conn).await }
                })
                .await?;
            Ok(held == 1)
        })
    }

    fn release_slot<'a>(&'a self, key: &'a str, member: &'a str) -> BoxFuture<'a, Result<bool, BusError>> {
        Box::pin(async move {
            check_key(key)?;
            check_key(member)?;
            let set = self.slot_set(key);
            let released: i64 = self
                .bus
                .run(Retry::UnlessSent, |mut conn| {
                    let mut call = scripts::KS_RELEASE_SLOT.prepare_invoke();
                    call.key(&set).arg(member);
                    async move { call.invoke_async(&mut conn).await }
                })
                .await?;
            Ok(released == 1)
        })
    }

    fn live_slots<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<usize, BusError>> {
        Box::pin(async move {
            check_key(key)?;
            let set = self.slot_set(key);
            let live: usize = self
                .bus
                .run(Retry::Always, |mut conn| {
                    let mut call = scripts::KS_LIVE_SLOTS.prepare_invoke();
                    call.key(&set);
                    async move { call.invoke_async(&mut conn).await }
                })
                .await?;
            Ok(live)
        })
    }

    fn ttl(&self) -> Duration {
        self.ttl
    }
}
