use mcp_fleet_server::{McpServer, server};

struct S;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Pair {
    a: i64,
    b: i64,
}

#[server]
impl S {
    /// A plain fn: called, not awaited.
    #[tool]
    fn sum(&self, Pair { a, b }: Pair) -> String {
        (a + b).to_string()
    }
}

fn main() {
    let server = McpServer::builder("s", "1").build();
    server.add_all(S.into_entries()).unwrap();
}
