//! Finding where to send commands: a fixed server, the primary Redis Sentinel names right now,
//! or a Redis Cluster (whose client routes each command to its slot's master). Every connection
//! the bus opens (publishing, tailing) is opened here, so after a failover the next reconnect
//! reaches the promoted replica.
//!
//! [`Conn`] is either kind of connection behind redis-rs's `ConnectionLike`, so scripts,
//! commands and pipelines run on both unchanged (a cluster routes a pipeline by its first key).

use std::time::Duration;

use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::cluster::ClusterClientBuilder;
use redis::cluster_async::ClusterConnection;
use redis::sentinel::{SentinelClient, SentinelNodeConnectionInfo, SentinelServerType};
use redis::{AsyncConnectionConfig, Client, Cmd, ConnectionInfo, Pipeline, RedisFuture, RedisResult, TlsMode, Value};

use crate::options::RedisEndpoint;

/// How to reach the current primary (or the cluster).
pub(crate) struct Endpoint {
    target: Target,
}

enum Target {
    Direct(Client),
    Sentinel { sentinels: Vec<ConnectionInfo>, master_name: String, node: SentinelNodeConnectionInfo },
    Cluster(Vec<ConnectionInfo>),
}

/// How long a connection may take to open, and a reply to arrive.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timeouts {
    pub(crate) connect: Duration,
    pub(crate) response: Duration,
}

impl Endpoint {
    /// Prepare `endpoint`; fails only on an invalid address (nothing is connected yet).
    pub(crate) fn new(endpoint: &RedisEndpoint) -> RedisResult<Endpoint> {
        let target = match endpoint {
            RedisEndpoint::Direct(info) => Target::Direct(Client::open(info.clone())?),
            RedisEndpoint::Sentinel { sentinels, master_name, primary, tls } => {
                let mut node = SentinelNodeConnectionInfo::default().set_redis_connection_info(primary.clone());
                if *tls {
                    node = node.set_tls_mode(TlsMode::Secure);
                }
                Target::Sentinel { sentinels: sentinels.clone(), master_name: master_name.clone(), node }
            }
            RedisEndpoint::Cluster { nodes, .. } => Target::Cluster(nodes.clone()),
        };
        Ok(Endpoint { target })
    }

    /// Whether this is a Redis Cluster.
    pub(crate) fn is_cluster(&self) -> bool {
        matches!(self.target, Target::Cluster(_))
    }

    /// Open a connection with `timeouts`: multiplexed to the current primary — with Sentinel,
    /// the one the sentinels (asked in order) name and `ROLE` confirms — or a cluster
    /// connection, which opens its own to the masters as commands need them.
    pub(crate) async fn connect(&self, timeouts: Timeouts) -> RedisResult<Conn> {
        let client = match &self.target {
            Target::Direct(client) => client.clone(),
            Target::Sentinel { sentinels, master_name, node } => {
                // Built per call: `SentinelClient` needs `&mut` and is not `Clone`, and building
                // one does no I/O. Resolution happens only when a connection is (re)opened.
                let mut sentinel = SentinelClient::build(
                    sentinels.clone(),
                    master_name,
                    Some(node.clone()),
                    SentinelServerType::Master,
                )?;
                sentinel.async_get_client().await?
            }
            Target::Cluster(nodes) => {
                let client = ClusterClientBuilder::new(nodes.clone())
                    .connection_timeout(timeouts.connect)
                    .response_timeout(timeouts.response)
                    .build()?;
                return Ok(Conn::Cluster(client.get_async_connection().await?));
            }
        };
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(timeouts.connect))
            .set_response_timeout(Some(timeouts.response));
        Ok(Conn::Single(client.get_multiplexed_async_connection_with_config(&config).await?))
    }
}

/// A connection to one server or to a cluster; clones share it.
#[derive(Clone)]
pub(crate) enum Conn {
    Single(MultiplexedConnection),
    Cluster(ClusterConnection),
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Single(conn) => conn.req_packed_command(cmd),
            Conn::Cluster(conn) => conn.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Single(conn) => conn.req_packed_commands(pipeline, offset, count),
            Conn::Cluster(conn) => conn.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Single(conn) => conn.get_db(),
            Conn::Cluster(conn) => conn.get_db(),
        }
    }
}
