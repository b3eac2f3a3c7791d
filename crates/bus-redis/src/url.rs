//! Reading a bus URL into [`RedisBusOptions`]: one server (`redis://`, parsed by redis-rs),
//! Sentinel (`redis+sentinel://`) and Redis Cluster (`redis+cluster://`), each with the query
//! parameters the bus reads itself (`stream`, `maxlen`, `min_replica_acks`, `shards`).

use mcp_fleet_bus::BusError;
use redis::{ConnectionInfo, IntoConnectionInfo, RedisConnectionInfo};

use crate::options::{RedisBusOptions, RedisEndpoint};
use mcp_fleet_bus::shard::Routing;

impl RedisBusOptions {
    /// Options from a URL.
    /// - One server: `redis://…` or `rediss://…` as redis-rs reads it.
    /// - Sentinel: `redis+sentinel://[user:password@]host:port[,host:port…]/MASTER_NAME[/DB]`
    ///   (`rediss+sentinel://` for TLS), where the credentials and database are the primary's;
    ///   `sentinel_username=` and `sentinel_password=` set the sentinels' own.
    /// - Redis Cluster: `redis+cluster://[user:password@]host:port[,host:port…]` (`rediss+cluster://`
    ///   for TLS): any reachable nodes of the cluster; the client learns the rest.
    ///
    /// Every form takes `stream=KEY`, `maxlen=N`, `min_replica_acks=N`, `shards=N` (see
    /// [`RedisBusOptions::shards`]) and `routing=interest|all` (see [`RedisBusOptions::routing`]); a plain URL passes every other parameter to redis-rs (e.g.
    /// `protocol=resp3`), the Sentinel and Cluster forms refuse unknown ones.
    ///
    /// ```
    /// use mcp_fleet_bus_redis::{RedisBusOptions, RedisEndpoint};
    /// let o = RedisBusOptions::from_url("redis://127.0.0.1:6379/2?stream=fleet-a&maxlen=500", "n1").unwrap();
    /// assert_eq!((o.stream_key.as_str(), o.max_len), ("fleet-a", 500));
    /// let s = RedisBusOptions::from_url("redis+sentinel://:pw@10.0.0.1:26379,10.0.0.2:26379/mymaster", "n1").unwrap();
    /// assert!(matches!(s.endpoint, RedisEndpoint::Sentinel { ref sentinels, .. } if sentinels.len() == 2));
    /// let c = RedisBusOptions::from_url("redis+cluster://10.0.0.1:7000,10.0.0.2:7001?shards=12", "n1").unwrap();
    /// assert!(matches!(c.endpoint, RedisEndpoint::Cluster { ref nodes, .. } if nodes.len() == 2));
    /// assert_eq!(c.shards, 12);
    /// ```
    pub fn from_url(url: &str, node_id: &str) -> Result<Self, BusError> {
        let (base, query) = url.split_once('?').unwrap_or((url, ""));
        let mut params = QueryParams::parse(query)?;
        let mut options = match scheme(base) {
            Scheme::Sentinel { tls } => {
                let endpoint = parse_sentinel(base, tls, &params)?;
                params.refuse_rest("sentinel")?;
                Self::with_endpoint(endpoint, node_id)
            }
            Scheme::Cluster { tls } => {
                let endpoint = parse_cluster(base, tls)?;
                params.refuse_rest("cluster")?;
                Self::with_endpoint(endpoint, node_id)
            }
            Scheme::Plain => Self::new(&params.rebuild(base), node_id)?,
        };
        options.stream_key = params.stream.take().unwrap_or(options.stream_key);
        options.max_len = params.max_len.unwrap_or(options.max_len);
        options.min_replica_acks = params.min_replica_acks.unwrap_or(options.min_replica_acks);
        options.shards = params.shards.unwrap_or(options.shards);
        options.routing = params.routing.unwrap_or(options.routing);
        Ok(options)
    }
}

/// The URL forms, by scheme.
enum Scheme {
    Plain,
    Sentinel { tls: bool },
    Cluster { tls: bool },
}

fn scheme(base: &str) -> Scheme {
    let scheme = base.split_once("://").map_or("", |(scheme, _)| scheme);
    match scheme {
        "redis+sentinel" => Scheme::Sentinel { tls: false },
        "rediss+sentinel" => Scheme::Sentinel { tls: true },
        "redis+cluster" => Scheme::Cluster { tls: false },
        "rediss+cluster" => Scheme::Cluster { tls: true },
        _ => Scheme::Plain,
    }
}

/// The query parameters the bus reads itself; the rest is kept for redis-rs.
#[derive(Default)]
struct QueryParams {
    stream: Option<String>,
    max_len: Option<u64>,
    min_replica_acks: Option<usize>,
    shards: Option<usize>,
    routing: Option<Routing>,
    sentinel_username: Option<String>,
    sentinel_password: Option<String>,
    rest: Vec<String>,
}

impl QueryParams {
    fn parse(query: &str) -> Result<Self, BusError> {
        let mut params = QueryParams::default();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("stream", key)) if !key.is_empty() => params.stream = Some(key.to_owned()),
                Some(("maxlen", n)) => params.max_len = Some(number("maxlen", n)?),
                Some(("min_replica_acks", n)) => params.min_replica_acks = Some(number("min_replica_acks", n)?),
                Some(("shards", n)) => params.shards = Some(number("shards", n)?),
                Some(("routing", "interest")) => params.routing = Some(Routing::Interest),
                Some(("routing", "all")) => params.routing = Some(Routing::All),
                Some(("routing", other)) => {
                    return Err(BusError::Config(format!("invalid redis URL routing {other:?}: use interest or all")));
                }
                Some(("sentinel_username", user)) => params.sentinel_username = Some(user.to_owned()),
                Some(("sentinel_password", password)) => params.sentinel_password = Some(password.to_owned()),
                _ => params.rest.push(pair.to_owned()),
            }
        }
        Ok(params)
    }

    /// `base` with the parameters redis-rs should see.
    fn rebuild(&self, base: &str) -> String {
        if self.rest.is_empty() { base.to_owned() } else { format!("{base}?{}", self.rest.join("&")) }
    }

    fn refuse_rest(&self, form: &str) -> Result<(), BusError> {
        match self.rest.first() {
            Some(pair) => Err(BusError::Config(format!("unknown redis {form} URL parameter {pair:?}"))),
            None => Ok(()),
        }
    }
}

fn number<T: std::str::FromStr>(name: &str, value: &str) -> Result<T, BusError> {
    value.parse().map_err(|_| BusError::Config(format!("invalid redis URL {name} {value:?}")))
}

/// `[user:password@]hosts[/path]` after the scheme, with its credentials applied to `settings`.
struct Authority<'a> {
    hosts: Vec<&'a str>,
    path: &'a str,
    settings: RedisConnectionInfo,
}

fn split_authority<'a>(base: &'a str, form: &str) -> Result<Authority<'a>, BusError> {
    let invalid = || BusError::Config(format!("invalid redis {form} URL: no scheme"));
    let rest = base.split_once("://").map(|(_, rest)| rest).ok_or_else(invalid)?;
    let (userinfo, rest) = match rest.rsplit_once('@') {
        Some((userinfo, rest)) => (Some(userinfo), rest),
        None => (None, rest),
    };
    let (hosts, path) = rest.split_once('/').unwrap_or((rest, ""));
    let mut settings = RedisConnectionInfo::default();
    if let Some((user, password)) = userinfo.map(|u| u.split_once(':').unwrap_or((u, ""))) {
        if !user.is_empty() {
            settings = settings.set_username(user);
        }
        if !password.is_empty() {
            settings = settings.set_password(password);
        }
    }
    Ok(Authority { hosts: hosts.split(',').filter(|h| !h.is_empty()).collect(), path, settings })
}

/// Parse `redis+sentinel://[user:password@]h1:p1,h2:p2/MASTER[/DB]`.
fn parse_sentinel(base: &str, tls: bool, params: &QueryParams) -> Result<RedisEndpoint, BusError> {
    let invalid = |why: &str| BusError::Config(format!("invalid redis sentinel URL: {why}"));
    let authority = split_authority(base, "sentinel")?;
    let mut path = authority.path.split('/').filter(|s| !s.is_empty());
    let master_name = path.next().ok_or_else(|| invalid("no master name"))?.to_owned();
    let db =
        path.next().map(|db| db.parse::<i64>().map_err(|_| invalid("the database is not a number"))).transpose()?;
    let primary = authority.settings.set_db(db.unwrap_or(0));
    let scheme = if tls { "rediss" } else { "redis" };
    let sentinels = authority
        .hosts
        .iter()
        .map(|host| sentinel_info(&format!("{scheme}://{host}"), params))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(RedisEndpoint::Sentinel { sentinels, master_name, primary, tls })
}

fn sentinel_info(url: &str, params: &QueryParams) -> Result<ConnectionInfo, BusError> {
    let info =
        url.into_connection_info().map_err(|e| BusError::Config(format!("redis sentinel address {url}: {e}")))?;
    let mut settings = info.redis_settings().clone();
    if let Some(user) = &params.sentinel_username {
        settings = settings.set_username(user);
    }
    if let Some(password) = &params.sentinel_password {
        settings = settings.set_password(password);
    }
    Ok(info.set_redis_settings(settings))
}

/// Parse `redis+cluster://[user:password@]h1:p1,h2:p2[/]`: every node gets the credentials.
/// Redis Cluster has only database 0, so a path is refused.
fn parse_cluster(base: &str, tls: bool) -> Result<RedisEndpoint, BusError> {
    let authority = split_authority(base, "cluster")?;
    if !authority.path.is_empty() {
        return Err(BusError::Config(
            "invalid redis cluster URL: Redis Cluster has no databases, drop the path".into(),
        ));
    }
    if authority.hosts.is_empty() {
        return Err(BusError::Config("invalid redis cluster URL: no node address".into()));
    }
    let scheme = if tls { "rediss" } else { "redis" };
    let nodes = authority
        .hosts
        .iter()
        .map(|host| {
            let url = format!("{scheme}://{host}");
            let info = url
                .as_str()
                .into_connection_info()
                .map_err(|e| BusError::Config(format!("redis cluster node {url}: {e}")))?;
            Ok(info.set_redis_settings(authority.settings.clone()))
        })
        .collect::<Result<Vec<_>, BusError>>()?;
    Ok(RedisEndpoint::Cluster { nodes, tls })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_never_shows_a_password() {
        let direct = RedisBusOptions::new("redis://u:hunter22@example.invalid:6380/3", "n").expect("valid url");
        let url = "redis+sentinel://app:pr1mary@s1:26379/mymaster?sentinel_password=sent1nel";
        let sentinel = RedisBusOptions::from_url(url, "n").expect("valid sentinel url");
        for printed in [format!("{direct:?}"), format!("{sentinel:?}")] {
            assert!(
                !printed.contains("hunter22") && !printed.contains("pr1mary") && !printed.contains("sent1nel"),
                "{printed}"
            );
            assert!(printed.contains("redacted"), "{printed}");
        }
    }

    #[test]
    fn parses_urls_with_credentials_and_db() {
        let o = RedisBusOptions::new("redis://u:p@example.invalid:6380/3", "n 1").expect("valid url");
        let RedisEndpoint::Direct(info) = &o.endpoint else { panic!("direct") };
        assert_eq!(info.redis_settings().db(), 3);
        assert_eq!(o.tail_client_name(), "mcp-fleet-tail:mcp-fleet:events:n_1");
        assert!(RedisBusOptions::new("http://x", "n").is_err());
    }

    #[test]
    fn sentinel_urls_name_sentinels_master_and_primary_credentials() {
        let url = "redis+sentinel://app:secret@s1:26379,s2:26380/mymaster/4?stream=k&sentinel_password=sp&maxlen=9";
        let o = RedisBusOptions::from_url(url, "n").expect("valid sentinel url");
        let RedisEndpoint::Sentinel { sentinels, master_name, primary, tls } = &o.endpoint else { panic!("sentinel") };
        assert_eq!((master_name.as_str(), *tls, o.stream_key.as_str(), o.max_len), ("mymaster", false, "k", 9));
        assert_eq!((primary.username(), primary.password(), primary.db()), (Some("app"), Some("secret"), 4));
        assert_eq!(sentinels.len(), 2);
        assert_eq!(sentinels[1].addr().to_string(), "s2:26380");
        assert_eq!(sentinels[0].redis_settings().password(), Some("sp"));
        assert_eq!(o.min_replica_acks, 1, "behind Sentinel, a publish waits for a replica");
        let lone = RedisBusOptions::from_url("redis://h/0?min_replica_acks=2", "n").expect("url");
        assert_eq!(
            (lone.min_replica_acks, RedisBusOptions::new("redis://h", "n").expect("url").min_replica_acks),
            (2, 0)
        );
        let opt_out = RedisBusOptions::from_url("redis+sentinel://s1:26379/m?min_replica_acks=0", "n").expect("url");
        assert_eq!(opt_out.min_replica_acks, 0);
        assert!(RedisBusOptions::from_url("redis+sentinel://s1:26379", "n").is_err(), "no master name");
        assert!(RedisBusOptions::from_url("redis+sentinel://s1:26379/m?strem=x", "n").is_err(), "typo");
        let tls = RedisBusOptions::from_url("rediss+sentinel://s1:26379/m", "n").expect("tls sentinel");
        assert!(matches!(tls.endpoint, RedisEndpoint::Sentinel { tls: true, .. }));
    }

    #[test]
    fn cluster_urls_name_every_node_with_the_credentials() {
        let url = "redis+cluster://app:secret@c1:7000,c2:7001,c3:7002?shards=6&stream=k&min_replica_acks=0";
        let o = RedisBusOptions::from_url(url, "n").expect("valid cluster url");
        let RedisEndpoint::Cluster { nodes, tls } = &o.endpoint else { panic!("cluster") };
        assert_eq!((nodes.len(), *tls, o.shards, o.stream_key.as_str(), o.min_replica_acks), (3, false, 6, "k", 0));
        assert_eq!(nodes[2].addr().to_string(), "c3:7002");
        assert_eq!(nodes[1].redis_settings().password(), Some("secret"));
        let defaults = RedisBusOptions::from_url("redis+cluster://c1:7000", "n").expect("url");
        assert_eq!((defaults.shards, defaults.min_replica_acks), (crate::options::DEFAULT_CLUSTER_SHARDS, 1));
        assert!(RedisBusOptions::from_url("redis+cluster://c1:7000/2", "n").is_err(), "no databases");
        assert!(RedisBusOptions::from_url("redis+cluster://c1:7000?shard=2", "n").is_err(), "typo");
        assert!(RedisBusOptions::from_url("redis+cluster://", "n").is_err(), "no node");
        assert!(RedisBusOptions::from_url("redis://h?shards=x", "n").is_err(), "not a number");
        let routed = RedisBusOptions::from_url("redis+cluster://c1:7000?routing=interest", "n").expect("url");
        assert_eq!((routed.routing, defaults.routing), (Routing::Interest, Routing::All));
        assert!(RedisBusOptions::from_url("redis://h?routing=some", "n").is_err(), "unknown routing");
        let tls = RedisBusOptions::from_url("rediss+cluster://c1:7000", "n").expect("tls cluster");
        assert!(matches!(tls.endpoint, RedisEndpoint::Cluster { tls: true, .. }));
    }
}
