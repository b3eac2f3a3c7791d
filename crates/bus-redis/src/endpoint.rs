//! Finding the primary: a fixed server, or the one Redis Sentinel names right now. Every
//! connection the bus opens (publishing, tailing) asks here first, so after a failover the
//! next reconnect reaches the promoted replica.

use redis::sentinel::{SentinelClient, SentinelNodeConnectionInfo, SentinelServerType};
use redis::{AsyncConnectionConfig, Client, RedisResult, TlsMode, aio::MultiplexedConnection};

use crate::options::RedisEndpoint;

/// How to reach the current primary.
pub(crate) struct Endpoint {
    target: Target,
}

enum Target {
    Direct(Client),
    Sentinel { sentinels: Vec<redis::ConnectionInfo>, master_name: String, node: SentinelNodeConnectionInfo },
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
        };
        Ok(Endpoint { target })
    }

    /// A client for the current primary. With Sentinel this asks the sentinels (in order) and
    /// checks with `ROLE` that the named server considers itself the primary.
    pub(crate) async fn primary(&self) -> RedisResult<Client> {
        match &self.target {
            Target::Direct(client) => Ok(client.clone()),
            Target::Sentinel { sentinels, master_name, node } => {
                // Built per call: `SentinelClient` needs `&mut` and is not `Clone`, and building
                // one does no I/O. Resolution happens only when a connection is (re)opened.
                let mut sentinel = SentinelClient::build(
                    sentinels.clone(),
                    master_name,
                    Some(node.clone()),
                    SentinelServerType::Master,
                )?;
                sentinel.async_get_client().await
            }
        }
    }

    /// Open a multiplexed connection to the current primary with `config`.
    pub(crate) async fn connect(&self, config: &AsyncConnectionConfig) -> RedisResult<MultiplexedConnection> {
        self.primary().await?.get_multiplexed_async_connection_with_config(config).await
    }
}
