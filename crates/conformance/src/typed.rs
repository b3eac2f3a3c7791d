//! Fixtures written with the typed API: rmcp's calculator (`sum`, `sub`) and a structured
//! order lookup, their schemas derived from Rust types. Not suite fixtures: listed after them,
//! they put derived `inputSchema`s and `outputSchema`s (doc comments, serde renames, defaults,
//! enums, nested `$defs`) in front of the suite's wire-schema checks of `tools/list`.

use mcp_fleet_server::typed::{Json, ToolError};
use mcp_fleet_server::{McpServer, ServerError, server};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Two operands.
#[derive(Deserialize, JsonSchema)]
struct Operands {
    /// The first number.
    a: i64,
    /// The second number.
    b: i64,
}

/// Which orders to look up.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct OrderQuery {
    /// The customer's id.
    customer_id: String,
    /// Only orders in this state.
    status: Option<Status>,
    /// How many orders at most.
    #[serde(default = "five")]
    limit: u8,
}

fn five() -> u8 {
    5
}

/// An order's state.
#[derive(Clone, Copy, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Status {
    Open,
    Shipped,
}

/// The orders found.
#[derive(Serialize, JsonSchema)]
struct Orders {
    /// Each order found.
    orders: Vec<OrderSummary>,
}

/// One order.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct OrderSummary {
    order_id: String,
    status: Status,
}

struct Typed;

#[server]
impl Typed {
    /// Calculate the sum of two numbers.
    #[tool(name = "typed_sum", read_only)]
    async fn sum(&self, Operands { a, b }: Operands) -> String {
        (a + b).to_string()
    }

    /// Calculate the difference of two numbers.
    #[tool(name = "typed_sub", read_only)]
    async fn sub(&self, Operands { a, b }: Operands) -> Result<Json<i64>, ToolError> {
        a.checked_sub(b).map(Json).ok_or_else(|| ToolError::new("the difference overflows"))
    }

    /// Look up a customer's orders.
    #[tool(name = "typed_orders", title = "Order lookup", read_only)]
    async fn orders(&self, query: OrderQuery) -> Json<Orders> {
        let status = query.status.unwrap_or(Status::Open);
        let orders = (1..=query.limit.min(2))
            .map(|n| OrderSummary { order_id: format!("{}-{n}", query.customer_id), status })
            .collect();
        Json(Orders { orders })
    }
}

pub(crate) fn register(server: &McpServer) -> Result<(), ServerError> {
    server.add_all(Typed.into_entries()).map(|_| ())
}
