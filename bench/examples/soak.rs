// cargo build --release --workspace --examples && target/release/examples/soak
//! A soak: one `site` server process takes a million calls over streamable HTTP (protocol
//! 2026-07-28, no session) from concurrent keep-alive clients, a mix of what clients send:
//! counts, reads, lists, the site context and invalid arguments. The server's resident
//! memory is sampled every 100,000 calls; after the warm-up (the first two samples) it must
//! stay within 10% of its first value, or the run exits non-zero. Prints the series.

#[path = "../shared/load_url.rs"]
#[allow(dead_code, reason = "the soak uses the connection only")]
mod load_url;

use std::path::PathBuf;
use std::process::{ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use clap::Parser;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

/// Soak one server.
#[derive(Parser)]
struct Args {
    /// Calls in all.
    #[arg(long, default_value_t = 1_000_000)]
    calls: u64,
    /// Concurrent clients, each on its own connection.
    #[arg(long, default_value_t = 16)]
    clients: usize,
    /// Calls between two samples of the server's memory.
    #[arg(long, default_value_t = 100_000)]
    every: u64,
    /// Where the `site` binary is (default: beside this one).
    #[arg(long)]
    bin_dir: Option<PathBuf>,
}

/// The mix of calls: the tool, its arguments, and whether it should succeed.
fn nth_call(n: u64) -> (&'static str, Value, bool) {
    match n % 10 {
        0 => ("wp_get_post", json!({"id": 1}), true),
        1 => ("wp_list_posts", json!({"limit": 5}), true),
        2 => ("get_site_context", json!({}), true),
        3 => ("wp_get_post", json!({"id": "one"}), false),
        _ => ("my-plugin-count-posts", json!({"input": "post"}), true),
    }
}

#[tokio::main]
async fn main() -> Result<ExitCode, Box<dyn std::error::Error>> {
    let args = Args::parse();
    let bin_dir = match args.bin_dir {
        Some(dir) => dir,
        None => std::env::current_exe()?
            .parent()
            .ok_or("no directory")?
            .to_owned(),
    };
    let dir = std::env::temp_dir().join(format!("abilities-soak-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let mut server = Command::new(bin_dir.join("site"))
        .args(["--http", "127.0.0.1:0", "--db"])
        .arg(dir.join("site.db"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let pid = server.id().ok_or("the server exited")?;
    let mut line = String::new();
    BufReader::new(server.stdout.take().ok_or("no stdout")?)
        .read_line(&mut line)
        .await?;
    let url = line.trim().to_owned();

    let next = Arc::new(AtomicU64::new(0));
    let wrong = Arc::new(AtomicU64::new(0));
    let (samples, mut sampled) = tokio::sync::mpsc::unbounded_channel();
    let start = Instant::now();
    let mut clients = Vec::new();
    for _ in 0..args.clients {
        let (next, wrong, samples, url) = (
            Arc::clone(&next),
            Arc::clone(&wrong),
            samples.clone(),
            url.clone(),
        );
        let (total, every) = (args.calls, args.every);
        clients.push(tokio::spawn(async move {
            let mut connection = load_url::Connection::open(&url).await?;
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= total {
                    return Ok::<(), Box<dyn std::error::Error + Send + Sync>>(());
                }
                let (tool, arguments, succeeds) = nth_call(n);
                if connection.call(&url, tool, &arguments).await.is_ok() != succeeds {
                    wrong.fetch_add(1, Ordering::Relaxed);
                }
                if (n + 1) % every == 0 {
                    let _ = samples.send((n + 1, load_url::rss_kib(pid), start.elapsed()));
                }
            }
        }));
    }
    drop(samples);
    let mut series = Vec::new();
    println!("calls       RSS (KiB)   elapsed");
    while let Some((calls, rss, elapsed)) = sampled.recv().await {
        let rss = rss.ok_or("the server's memory could not be read")?;
        println!("{calls:>9}   {rss:>9}   {:>6.1} s", elapsed.as_secs_f64());
        series.push(rss);
    }
    for client in clients {
        client.await?.map_err(|e| e.to_string())?;
    }
    let elapsed = start.elapsed();
    let _ = server.kill().await;
    let _ = std::fs::remove_dir_all(&dir);
    let wrong = wrong.load(Ordering::Relaxed);
    #[allow(clippy::cast_precision_loss, reason = "a rate for people")]
    let rate = args.calls as f64 / elapsed.as_secs_f64();
    println!(
        "{} calls in {:.1} s ({rate:.0} calls/s), {wrong} answered otherwise than expected",
        args.calls,
        elapsed.as_secs_f64()
    );
    // After the warm-up: within 10% of the first sample past it.
    let settled = series.get(2..).unwrap_or_default();
    let Some(&base) = settled.first() else {
        println!("too few samples to judge: run more calls");
        return Ok(ExitCode::FAILURE);
    };
    let (low, high) = settled
        .iter()
        .fold((base, base), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    #[allow(clippy::cast_precision_loss, reason = "a ratio for people")]
    let spread = (high - low) as f64 / base as f64 * 100.0;
    let flat = high * 10 <= base * 11 && low * 10 >= base * 9;
    println!(
        "after warm-up: {low}-{high} KiB, {spread:.1}% of {base} KiB: {}",
        if flat {
            "flat (within 10%)"
        } else {
            "NOT flat"
        }
    );
    Ok(if flat && wrong == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
