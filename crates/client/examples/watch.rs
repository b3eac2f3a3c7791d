//! An example host: watch a server's lists and print one JSON line per state change.
//!
//! ```text
//! cargo run -p mcp-fleet-client --example watch -- http://127.0.0.1:8080/mcp [--list tools] [--token T]
//! {"list":"tools","state":"refreshing","revision":null,"fetchedAtMs":null,"reason":"listening"}
//! {"list":"tools","state":"fresh","revision":"9f…","fetchedAtMs":1764633600000,"reason":null}
//! ```
//!
//! `--list` (`tools`, `prompts`, `resources`, `templates`) may be repeated; without it every
//! list is watched. `--era 2025` speaks to a 2025-era server (a session and its GET stream). Nothing but the state lines goes to stdout; usage errors go to stderr.
//! It runs until Ctrl-C, or until the server refuses the token (the last lines then say
//! `unauthorized`).

use std::io::Write;

use mcp_fleet_client::{CatalogWatcher, Endpoint, ListKind, NoObserver, RpcClient, Transport, WatcherOptions, list};
use tokio::sync::mpsc;

/// The command line.
struct Args {
    url: String,
    lists: Vec<ListKind>,
    token: Option<String>,
    era_2025: bool,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let (mut url, mut lists, mut token, mut era_2025) = (None, Vec::new(), None, false);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--list" => {
                let name = args.next().ok_or("--list needs a list name")?;
                lists.push(list::parse_short_name(&name).ok_or(format!("unknown list {name:?}"))?);
            }
            "--token" => token = Some(args.next().ok_or("--token needs a value")?),
            "--era" => match args.next().as_deref() {
                Some("2025") => era_2025 = true,
                Some("2026") => era_2025 = false,
                other => return Err(format!("--era is 2025 or 2026, not {other:?}")),
            },
            _ if url.is_none() && !arg.starts_with("--") => url = Some(arg),
            _ => return Err(format!("unexpected argument {arg:?}")),
        }
    }
    if lists.is_empty() {
        lists = ListKind::ALL.to_vec();
    }
    let url = url.ok_or("usage: watch URL [--list tools]… [--token TOKEN] [--era 2025|2026]")?;
    Ok(Args { url, lists, token, era_2025 })
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            return std::process::ExitCode::from(2);
        }
    };
    let endpoint = Endpoint::parse(&args.url).and_then(|e| match &args.token {
        Some(token) => e.with_bearer_token(token),
        None => Ok(e),
    });
    let endpoint = match endpoint {
        Ok(endpoint) => endpoint,
        Err(error) => {
            eprintln!("{error}");
            return std::process::ExitCode::from(2);
        }
    };
    let rpc = RpcClient::new(Transport::http1(), endpoint);
    let rpc = if args.era_2025 { rpc.era_2025() } else { rpc };
    let options = WatcherOptions { relist: args.lists.clone(), ..WatcherOptions::default() };
    let watcher = CatalogWatcher::new(rpc.clone(), rpc, options);
    // One line per change of any list; the channel only carries lines to the printer.
    let (lines, mut printed) = mpsc::unbounded_channel::<String>();
    for kind in &args.lists {
        let Some(mut state) = watcher.states(*kind) else { continue };
        let lines = lines.clone();
        tokio::spawn(async move {
            while state.changed().await.is_ok() {
                let line = state.borrow_and_update().to_line();
                if lines.send(line).is_err() {
                    return;
                }
            }
        });
    }
    drop(lines);
    let watching = tokio::spawn(watcher.run(NoObserver, async {
        let _ = tokio::signal::ctrl_c().await;
    }));
    let mut stdout = std::io::stdout().lock();
    while let Some(line) = printed.recv().await {
        if writeln!(stdout, "{line}").and_then(|()| stdout.flush()).is_err() {
            break;
        }
    }
    drop(stdout);
    let _ = watching.await;
    std::process::ExitCode::SUCCESS
}
