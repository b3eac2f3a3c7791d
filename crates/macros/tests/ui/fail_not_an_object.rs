use mcp_fleet_server::server;

struct S;

#[server]
impl S {
    /// Squares.
    #[tool]
    async fn square(&self, n: i64) -> String {
        (n * n).to_string()
    }
}

fn main() {}
