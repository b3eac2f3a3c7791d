use mcp_fleet_server::server;

struct S;

#[server]
impl S {
    /// Ping.
    #[tool]
    async fn ping() -> &'static str {
        "pong"
    }
}

fn main() {}
