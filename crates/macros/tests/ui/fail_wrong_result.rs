use mcp_fleet_server::server;

struct S;

#[server]
impl S {
    /// A number is no tool result: wrap it in Json.
    #[tool]
    async fn count(&self) -> u64 {
        7
    }
}

fn main() {
    let _ = S.into_entries();
}
