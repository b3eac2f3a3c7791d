use mcp_fleet_server::server;

struct S;

#[server]
impl S {
    /// Sync.
    #[tool]
    fn ping(&self) -> &'static str {
        "pong"
    }
}

fn main() {}
