//! What the bridge adds to a call: `echo` of server-everything called directly over stdio,
//! then through `abilities-bridge` (native mode, also over stdio), sequentially; the p50 and
//! p90 of each and the difference.
//!
//! `cargo run --release -p abilities-bridge --example bridge_overhead -- \
//!     --bridge target/release/abilities-bridge --calls 2000 -- mcp-server-everything stdio`

use std::time::{Duration, Instant};

use abilities::protocol::rmcp::model::CallToolRequestParams;
use abilities::protocol::rmcp::service::RunningService;
use abilities::protocol::rmcp::transport::TokioChildProcess;
use abilities::protocol::rmcp::{RoleClient, ServiceExt};
use serde_json::json;

async fn spawn(
    command: &str,
    args: &[String],
) -> Result<RunningService<RoleClient, ()>, Box<dyn std::error::Error>> {
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(args);
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::null())
        .spawn()?;
    Ok(().serve(transport).await?)
}

/// Latencies of `calls` sequential calls of `tool`, after 100 to warm up.
async fn measure(
    client: &RunningService<RoleClient, ()>,
    tool: &str,
    calls: usize,
) -> Result<Vec<Duration>, Box<dyn std::error::Error>> {
    let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(
        json!({"message": "ping"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    );
    let mut times = Vec::with_capacity(calls);
    for i in 0..calls + 100 {
        let started = Instant::now();
        let result = client.call_tool(params.clone()).await?;
        if result.is_error == Some(true) {
            return Err(format!("{tool} failed: {result:?}").into());
        }
        if i >= 100 {
            times.push(started.elapsed());
        }
    }
    times.sort();
    Ok(times)
}

fn pct(times: &[Duration], p: f64) -> f64 {
    let i = ((times.len() as f64 * p) as usize).min(times.len().saturating_sub(1));
    times.get(i).map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let split = args
        .iter()
        .position(|a| a == "--")
        .ok_or("usage: --bridge BIN [--calls N] -- UPSTREAM [ARGS...]")?;
    let (ours, upstream) = args.split_at(split);
    let upstream = &upstream[1..];
    let flag = |name: &str| {
        ours.iter()
            .position(|a| a == name)
            .and_then(|i| ours.get(i + 1))
    };
    let bridge = flag("--bridge").ok_or("--bridge BIN is required")?;
    let calls: usize = flag("--calls").map_or(Ok(2000), |n| n.parse())?;
    let (command, rest) = upstream
        .split_first()
        .ok_or("the upstream's command is missing")?;

    let direct = spawn(command, rest).await?;
    let direct_times = measure(&direct, "echo", calls).await?;
    let _ = direct.cancel().await;

    let dir = std::env::temp_dir().join(format!("bridge-overhead-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let config = dir.join("config.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"everything": {"command": command, "args": rest}}}).to_string(),
    )?;
    let bridged = spawn(
        bridge,
        &[
            "--config".into(),
            config.display().to_string(),
            "--mode".into(),
            "native".into(),
        ],
    )
    .await?;
    let bridged_times = measure(&bridged, "everything-echo", calls).await?;
    let _ = bridged.cancel().await;
    let _ = std::fs::remove_dir_all(&dir);

    println!("{calls} sequential calls of echo over stdio, after 100 to warm up");
    println!("{:<24} {:>9} {:>9}", "", "p50 ms", "p90 ms");
    println!(
        "{:<24} {:>9.3} {:>9.3}",
        "direct",
        pct(&direct_times, 0.5),
        pct(&direct_times, 0.9)
    );
    println!(
        "{:<24} {:>9.3} {:>9.3}",
        "through the bridge",
        pct(&bridged_times, 0.5),
        pct(&bridged_times, 0.9)
    );
    println!(
        "{:<24} {:>9.3} {:>9.3}",
        "the bridge adds",
        pct(&bridged_times, 0.5) - pct(&direct_times, 0.5),
        pct(&bridged_times, 0.9) - pct(&direct_times, 0.9)
    );
    Ok(())
}
