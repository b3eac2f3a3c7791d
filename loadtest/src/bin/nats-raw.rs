//! The NATS JetStream floor beside the bus's ceiling (BENCHMARKS.md, "The bus's ceiling"): the
//! publish loop `bus-sim` runs — `--messages` publishes, `--concurrency` of them awaiting their
//! stream acknowledgement at once — with async-nats alone: no envelope, no subject choice, no
//! epoch or rollback bookkeeping, nobody consuming. What `redis-benchmark`'s `XADD` is for Redis.
//!
//! ```sh
//! nats-raw --url nats://127.0.0.1:4222 --messages 100000 --concurrency 32
//! ```

use std::time::Instant;

use async_nats::jetstream::{self, stream};
use clap::Parser;
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;

#[derive(Parser)]
#[command(about = "Raw JetStream publishes per second, the floor of the NATS bus's ceiling")]
struct Args {
    /// The NATS server.
    #[arg(long, default_value = "nats://127.0.0.1:4222")]
    url: String,
    /// Messages published.
    #[arg(long, default_value_t = 100_000)]
    messages: usize,
    /// Publishes awaiting their acknowledgement at once.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// Bytes per message (about a bus envelope's).
    #[arg(long, default_value_t = 200)]
    size: usize,
    /// The stream, created for the run (with the bus's default retention) and deleted after.
    #[arg(long, default_value = "MCPFLEET_RAWBENCH")]
    stream: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let js = jetstream::new(async_nats::connect(&args.url).await?);
    let subject = format!("{}.raw", args.stream.to_lowercase());
    let _ = js.delete_stream(&args.stream).await;
    let config = stream::Config {
        name: args.stream.clone(),
        subjects: vec![subject.clone()],
        max_messages: 100_000,
        ..Default::default()
    };
    js.create_stream(config).await?;
    let payload = bytes::Bytes::from(vec![b'v'; args.size]);
    let started = Instant::now();
    let mut acks = FuturesUnordered::new();
    for _ in 0..args.messages {
        if acks.len() >= args.concurrency.max(1)
            && let Some(ack) = acks.next().await
        {
            ack?;
        }
        acks.push(js.publish(subject.clone(), payload.clone()).await?.into_future());
    }
    while let Some(ack) = acks.next().await {
        ack?;
    }
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "{} messages of {} bytes in {seconds:.2} s: {:.0}/s",
        args.messages,
        args.size,
        args.messages as f64 / seconds
    );
    js.delete_stream(&args.stream).await?;
    Ok(())
}
