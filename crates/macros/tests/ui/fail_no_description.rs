use mcp_fleet_server::server;

struct S;

#[server]
impl S {
    #[tool]
    async fn ping(&self) -> &'static str {
        "pong"
    }
}

fn main() {}
