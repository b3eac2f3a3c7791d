//! The examples gallery of mcp-fleet. Each binary in `src/bin/` is one small server that does
//! one thing (see `examples/README.md`); `tests/examples/` runs each over real HTTP.
//!
//! This library is what every example does the same way, so the examples show only what
//! differs: where to listen (the first argument, else `$LISTEN`, else `127.0.0.1:8080`; port 0
//! picks a free one), the line `listening on http://ADDR/mcp` on stdout once bound (a test
//! reads the port from it), logs on stderr (`RUST_LOG`), and serving until SIGINT/SIGTERM,
//! then the drain.
//!
//! ```no_run
//! use mcp_fleet_server::{HandlerOptions, McpServer, typed};
//! # async fn demo() -> mcp_fleet_examples::Result {
//! let server = McpServer::builder("demo", "1.0.0").build();
//! server.add(typed::tool("ping", "Answers pong", |_: typed::NoArgs| async { "pong" }))?;
//! mcp_fleet_examples::run(server, HandlerOptions::default()).await
//! # }
//! ```

use mcp_fleet_server::{HandlerOptions, McpHandler, ServerFactory, create_mcp_handler, shutdown_signal};
use tokio::net::TcpListener;

/// What an example's `main` returns: any error, printed by the runtime.
pub type Result<T = ()> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// The `n`th command-line argument, else the environment variable `var`, else `default`.
pub fn arg_or(n: usize, var: &str, default: &str) -> String {
    std::env::args().nth(n).or_else(|| std::env::var(var).ok()).unwrap_or_else(|| default.to_owned())
}

/// Where an example listens: the first argument, else `$LISTEN`, else `127.0.0.1:8080`.
pub fn listen_addr() -> String {
    arg_or(1, "LISTEN", "127.0.0.1:8080")
}

/// Bind `addr`, then print `listening on http://ADDR/mcp` with the bound address (the real
/// port when `addr` asked for port 0). Returns the listener and that URL.
pub async fn bind(addr: &str) -> Result<(TcpListener, String)> {
    let listener = TcpListener::bind(addr).await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    println!("listening on {url}");
    Ok((listener, url))
}

/// Serve `handler` on `listener` until SIGINT or SIGTERM; then drain (listen streams end with
/// their completion result) and return.
pub async fn serve(handler: McpHandler, listener: TcpListener) -> Result {
    Ok(handler.serve_until(listener, shutdown_signal()).await?)
}

/// Log to stderr, filtered by `RUST_LOG` (default `info`); stdout keeps the one line a test
/// reads.
pub fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).init();
}

/// The whole `main` of most examples: log to stderr, build the handler for `factory` with
/// `options`, bind [`listen_addr`], serve until stopped.
pub async fn run(factory: impl ServerFactory, options: HandlerOptions) -> Result {
    init_tracing();
    let handler = create_mcp_handler(factory, options).await?;
    let (listener, _) = bind(&listen_addr()).await?;
    serve(handler, listener).await
}
