//! stdio with the pipe out of the way: every request written ahead, in large writes, up to
//! a window of calls in flight, and the answers read as they come. The server never waits
//! for the load generator, so what it spends per call (CPU from `/proc`) is its own work:
//! reading, answering and writing, not one wake-up per line.

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;
use tokio::sync::Semaphore;

/// Calls in flight at most: the server has work queued, and memory stays bounded.
const WINDOW: usize = 2_048;
/// Requests per write.
const BATCH: usize = 256;

/// What a bulk run measured.
pub(crate) struct Bulk {
    pub(crate) calls_per_sec: f64,
    /// CPU time the server spent per call, every thread.
    pub(crate) cpu_per_call: Option<Duration>,
}

/// Run `calls` calls of `call` (a `tools/call`'s params) through `bin --db db` over stdio,
/// with `cpu` reading the server's CPU time.
pub(crate) async fn run(
    bin: &Path,
    db: &Path,
    calls: usize,
    call: &str,
    cpu: fn(Option<u32>) -> Option<Duration>,
) -> Result<Bulk, Box<dyn std::error::Error>> {
    let mut child = Command::new(bin)
        .arg("--db")
        .arg(db)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let mut stdin = child.stdin.take().ok_or("stdin")?;
    let mut lines = BufReader::with_capacity(1 << 16, child.stdout.take().ok_or("stdout")?).lines();
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"loadgen","version":"1"}}}"#;
    stdin.write_all(format!("{init}\n").as_bytes()).await?;
    lines.next_line().await?.ok_or("no initialize answer")?;
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .await?;
    stdin.flush().await?;
    let window = Arc::new(Semaphore::new(WINDOW));
    let before = cpu(child.id());
    let start = Instant::now();
    let call = call.to_owned();
    let writer_window = Arc::clone(&window);
    let writer = tokio::spawn(async move {
        let mut id = 1;
        while id <= calls {
            let n = BATCH.min(calls + 1 - id);
            writer_window
                .acquire_many(u32::try_from(n)?)
                .await?
                .forget();
            let mut batch = String::with_capacity(n * 120);
            for id in id..id + n {
                batch.push_str(&format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{call}}}"#
                ));
                batch.push('\n');
            }
            stdin.write_all(batch.as_bytes()).await?;
            stdin.flush().await?;
            id += n;
        }
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(stdin)
    });
    let mut answered = 0;
    while answered < calls {
        let line = lines
            .next_line()
            .await?
            .ok_or("the server closed its output")?;
        if !line.contains(r#""isError":false"#) {
            return Err(format!("a call failed: {line}").into());
        }
        answered += 1;
        window.add_permits(1);
    }
    let elapsed = start.elapsed();
    let after = cpu(child.id());
    let _stdin = writer.await?.map_err(|e| e.to_string())?;
    let _ = child.kill().await;
    let cpu_per_call = (|| {
        let spent = after?.checked_sub(before?)?;
        Some(spent / u32::try_from(calls.max(1)).ok()?)
    })();
    Ok(Bulk {
        calls_per_sec: calls as f64 / elapsed.as_secs_f64(),
        cpu_per_call,
    })
}
