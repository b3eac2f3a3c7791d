use mcp_fleet_server::server;

struct S;

#[server]
impl S {
    /// Ping.
    #[tool(readonly)]
    async fn ping(&self) -> &'static str {
        "pong"
    }
}

fn main() {}
