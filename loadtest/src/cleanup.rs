//! What the benchmark binaries leave on the shared brokers, removed when they end: Redis keys
//! under their unique name, NATS streams and membership buckets of their unique stream name.

/// `redis-cli` (127.0.0.1:6379) with `args`; its standard output (empty if it failed).
///
/// ```no_run
/// let pong = mcp_fleet_loadtest::cleanup::redis_cli(&["ping"]);
/// ```
pub fn redis_cli(args: &[&str]) -> String {
    std::process::Command::new("redis-cli")
        .args(args)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

/// The Redis keys whose names contain `unique`.
///
/// ```no_run
/// assert!(mcp_fleet_loadtest::cleanup::redis_keys("nothing-has-this-name").is_empty());
/// ```
pub fn redis_keys(unique: &str) -> Vec<String> {
    redis_cli(&["--scan", "--pattern", &format!("*{unique}*")]).lines().map(str::to_owned).collect()
}

/// Delete the Redis keys whose names contain `unique`; how many there were, and how many are
/// left.
///
/// ```no_run
/// let (deleted, left) = mcp_fleet_loadtest::cleanup::delete_redis_keys("bench-run-42");
/// ```
pub fn delete_redis_keys(unique: &str) -> (usize, usize) {
    let keys = redis_keys(unique);
    for chunk in keys.chunks(500) {
        let mut args = vec!["del"];
        args.extend(chunk.iter().map(String::as_str));
        redis_cli(&args);
    }
    (keys.len(), redis_keys(unique).len())
}

/// Delete the NATS bus stream `stream` at `url` and its membership bucket; whether the stream
/// was deleted.
///
/// ```no_run
/// # async fn run() {
/// mcp_fleet_loadtest::cleanup::delete_nats_bus("nats://127.0.0.1:4222", "BENCH_RUN_42").await;
/// # }
/// ```
pub async fn delete_nats_bus(url: &str, stream: &str) -> bool {
    let Ok(client) = async_nats::connect(url).await else { return false };
    let js = async_nats::jetstream::new(client);
    let _ = js.delete_key_value(format!("{stream}_MEMBERS")).await;
    js.delete_stream(stream).await.is_ok()
}
