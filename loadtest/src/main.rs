//! The `mcp-fleet-loadtest` binary: parse the command line, raise the file limit, run the
//! asked mode (or render saved reports: `report`), print the table, write `--json` and
//! `--html`, exit 1 when `--verify` found a loss (2 on errors). Everything else lives in the
//! library.

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use mcp_fleet_loadtest::args::{Args, Command, Mode};
use mcp_fleet_loadtest::error::LoadtestError;
use mcp_fleet_loadtest::{limit, plan::Plan, raise_file_limit, worker};

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("mcp-fleet-loadtest: {e}");
            ExitCode::from(2)
        }
    }
}

async fn run(args: &Args) -> Result<ExitCode, LoadtestError> {
    if let Some(Command::Report(report)) = &args.command {
        mcp_fleet_loadtest::html::write_comparison(&report.files, &report.html)?;
        return Ok(ExitCode::SUCCESS);
    }
    let files = raise_file_limit()?;
    match args.mode {
        Mode::LimitWriter => {
            let interval = Duration::from_millis(args.interval_ms);
            limit::writer(&args.mcp, args.streams, args.events, args.frame_bytes, interval)?;
            return Ok(ExitCode::SUCCESS);
        }
        Mode::LimitReader => {
            limit::reader(&args.mcp, args.streams).await?;
            return Ok(ExitCode::SUCCESS);
        }
        Mode::Fanout => {}
    }
    if let Some(index) = args.worker_index {
        worker::serve(args, &Plan::from_args(args)?, index, args.worker_count).await?;
        return Ok(ExitCode::SUCCESS);
    }
    check_file_budget(args, files)?;
    let launch = worker::Launch::current()?;
    let report = mcp_fleet_loadtest::run(args, Some(&launch)).await?;
    print!("{}", report.table());
    if let Some(path) = &args.json {
        report.write_json(path)?;
    }
    if let Some(path) = &args.html {
        report.write_html(path)?;
    }
    Ok(ExitCode::from(u8::try_from(report.exit_code()).unwrap_or(2)))
}

/// Refuse a run whose loader processes would run out of file descriptors.
fn check_file_budget(args: &Args, files: u64) -> Result<(), LoadtestError> {
    let loaders = args.workers.max(1);
    let streams = args.streams.div_ceil(loaders);
    let sockets = if args.h2_streams_per_conn == 0 {
        streams + args.relist_concurrency
    } else {
        streams.div_ceil(args.h2_streams_per_conn) + args.urls.len().max(1)
    };
    let needed = (sockets + 64) as u64;
    if needed > files {
        return Err(LoadtestError::Usage(format!(
            "each loader needs ≈ {needed} file descriptors but the limit is {files}: use --workers {} or h2c (--h2-streams-per-conn)",
            (args.streams as u64 * 11 / 10).div_ceil(files.saturating_sub(64 + args.relist_concurrency as u64).max(1))
        )));
    }
    Ok(())
}
