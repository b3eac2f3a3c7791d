use mcp_fleet_server::server;

struct S;

#[server]
impl S {
    /// One.
    #[tool]
    async fn ping(&self) -> &'static str {
        "1"
    }

    /// Two.
    #[tool(name = "ping")]
    async fn other(&self) -> &'static str {
        "2"
    }
}

fn main() {}
