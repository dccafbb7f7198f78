// cargo build --release --workspace --examples && target/release/examples/loadgen
//! A load generator: N concurrent clients calling `my-plugin-count-posts` (an SQLite count)
//! against the `site` example (abilities), `rmcp_site` (the same tool hand-written with rmcp's
//! macros) and `bare_site` (the same count behind a bare JSON-RPC endpoint, no MCP machinery:
//! the floor), each a separate server process, over streamable HTTP on 127.0.0.1 and over
//! stdio. Prints calls/s, p50 and p99 for each, the ratios, and the memory an idle HTTP
//! session costs each server.
//!
//! `--url URL` loads a server that is already running instead (one replica, or a cluster
//! behind a load balancer: `scripts/cluster.sh`), with protocol 2026-07-28 requests that need
//! no session (or `--protocol 2025`, a 2025-11-25 session per client): `--tool` with
//! `--arguments` from every client, or with `--confirm` the `todo` example's MCP-AQL
//! confirmed deletions, timed one by one.

#[path = "../shared/load_url.rs"]
mod load_url;
#[path = "../shared/stdio_bulk.rs"]
mod stdio_bulk;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use http_body_util::Full;
use hyper::body::Bytes;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{Mutex, oneshot};

/// Drive both servers and compare.
#[derive(Parser)]
struct Args {
    /// Concurrent clients.
    #[arg(long, default_value_t = 16)]
    clients: usize,
    /// Calls per client.
    #[arg(long, default_value_t = 1_000)]
    calls: usize,
    /// Rounds per measurement, alternating the servers; the medians are reported.
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Idle HTTP sessions opened to measure memory per session.
    #[arg(long, default_value_t = 200)]
    sessions: usize,
    /// Which transports to measure.
    #[arg(long, value_enum, default_value_t = Transport::Both)]
    transport: Transport,
    /// Where the server binaries are (default: beside this one).
    #[arg(long)]
    bin_dir: Option<PathBuf>,
    /// Load this running server instead (`http://HOST:PORT/mcp`).
    #[arg(long)]
    url: Option<String>,
    /// With --url: the tool every client calls.
    #[arg(long, default_value = "get_todo")]
    tool: String,
    /// With --url: its arguments (JSON).
    #[arg(long, default_value = r#"{"id": 1}"#)]
    arguments: String,
    /// With --url: each client calls for this many seconds instead of `--calls` times.
    #[arg(long)]
    seconds: Option<f64>,
    /// With --url: the protocol (`2026`: 2026-07-28 requests that need no session; `2025`:
    /// 2025-11-25 in a session per client, where the server keeps sessions).
    #[arg(long, value_enum, default_value = "2026")]
    protocol: load_url::Protocol,
    /// With --url: time this many confirmed deletions of the `todo` example instead.
    #[arg(long)]
    confirm: Option<usize>,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Transport {
    Http,
    Stdio,
    Both,
}

const CALL: &str = r#"{"name":"my-plugin-count-posts","arguments":{"input":"post"}}"#;

struct Run {
    calls_per_sec: f64,
    p50: Duration,
    p99: Duration,
    /// CPU time the server process spent per call (every thread), where `/proc` tells.
    cpu_per_call: Option<Duration>,
}

/// CPU time every thread of a process has run, from `/proc/<pid>/task/*/schedstat`
/// (nanoseconds, unlike the clock ticks of `/proc/<pid>/stat`).
fn cpu_time(pid: Option<u32>) -> Option<Duration> {
    let tasks = std::fs::read_dir(format!("/proc/{}/task", pid?)).ok()?;
    let mut total = 0u64;
    for task in tasks.flatten() {
        let stat = std::fs::read_to_string(task.path().join("schedstat")).ok()?;
        total += stat.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(Duration::from_nanos(total))
}

/// The CPU a server spent between two readings, per call.
fn per_call(before: Option<Duration>, after: Option<Duration>, calls: usize) -> Option<Duration> {
    let spent = after?.checked_sub(before?)?;
    Some(spent / u32::try_from(calls.max(1)).ok()?)
}

fn summarize(latencies: Vec<Duration>, elapsed: Duration) -> Run {
    let calls_per_sec = latencies.len() as f64 / elapsed.as_secs_f64();
    let (p50, p99) = load_url::quantiles(latencies);
    Run {
        calls_per_sec,
        p50,
        p99,
        cpu_per_call: None,
    }
}

/// Start `bin` serving HTTP on a free port and return it with its URL.
async fn start_http(bin: &Path, db: &Path) -> Result<(Child, String), Box<dyn std::error::Error>> {
    let mut child = Command::new(bin)
        .args(["--http", "127.0.0.1:0", "--db"])
        .arg(db)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).await?;
    Ok((child, line.trim().to_owned()))
}

/// One HTTP/1.1 connection with its MCP session.
struct Session {
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    host: String,
    path: String,
    id: String,
}

impl Session {
    async fn open(url: &str) -> Result<Self, Box<dyn std::error::Error>> {
        let rest = url.strip_prefix("http://").ok_or("not an http URL")?;
        let (host, path) = rest.split_once('/').ok_or("no path")?;
        let stream = tokio::net::TcpStream::connect(host).await?;
        stream.set_nodelay(true)?;
        let (sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await?;
        tokio::spawn(connection);
        let mut session = Self {
            sender,
            host: host.to_owned(),
            path: format!("/{path}"),
            id: String::new(),
        };
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "loadgen", "version": "1"}}});
        let (headers, _) = session.post(&init.to_string()).await?;
        session.id = headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        session
            .post(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .await?;
        Ok(session)
    }

    async fn post(
        &mut self,
        body: &str,
    ) -> Result<(hyper::HeaderMap, String), Box<dyn std::error::Error>> {
        use http_body_util::BodyExt;
        let mut request = hyper::Request::post(&self.path)
            .header("host", &self.host)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18");
        if !self.id.is_empty() {
            request = request.header("mcp-session-id", &self.id);
        }
        self.sender.ready().await?;
        let response = self
            .sender
            .send_request(request.body(Full::new(Bytes::from(body.to_owned())))?)
            .await?;
        let headers = response.headers().clone();
        let body = response.into_body().collect().await?.to_bytes();
        Ok((headers, String::from_utf8_lossy(&body).into_owned()))
    }
}

async fn http_run(
    url: &str,
    pid: Option<u32>,
    clients: usize,
    calls: usize,
) -> Result<Run, Box<dyn std::error::Error>> {
    let mut sessions = Vec::new();
    for _ in 0..clients {
        sessions.push(Session::open(url).await?);
    }
    let cpu = cpu_time(pid);
    let start = Instant::now();
    let tasks: Vec<_> = sessions
        .into_iter()
        .map(|mut session| {
            tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(calls);
                for i in 0..calls {
                    let body = format!(
                        r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{CALL}}}"#,
                        i + 1
                    );
                    let sent = Instant::now();
                    let (_, answer) = session.post(&body).await.map_err(|e| e.to_string())?;
                    latencies.push(checked(sent, &answer)?);
                }
                Ok::<_, String>(latencies)
            })
        })
        .collect();
    let mut run = summarize(gather(tasks).await?, start.elapsed());
    run.cpu_per_call = per_call(cpu, cpu_time(pid), clients * calls);
    Ok(run)
}

/// Every client's latencies, or the first failure.
async fn gather(
    tasks: Vec<tokio::task::JoinHandle<Result<Vec<Duration>, String>>>,
) -> Result<Vec<Duration>, Box<dyn std::error::Error>> {
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await??);
    }
    Ok(all)
}

/// A call's latency, if its answer is a success.
fn checked(sent: Instant, answer: &str) -> Result<Duration, String> {
    if answer.contains(r#""isError":false"#) {
        Ok(sent.elapsed())
    } else {
        Err(format!("a call failed: {answer}"))
    }
}

type Waiters = Arc<Mutex<HashMap<u64, oneshot::Sender<String>>>>;

async fn stdio_run(
    bin: &Path,
    db: &Path,
    clients: usize,
    calls: usize,
) -> Result<Run, Box<dyn std::error::Error>> {
    let mut child = Command::new(bin)
        .arg("--db")
        .arg(db)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    eprintln!("{} serving stdio: pid {:?}", bin.display(), child.id());
    let stdin: Arc<Mutex<ChildStdin>> = Arc::new(Mutex::new(child.stdin.take().ok_or("stdin")?));
    let mut lines = BufReader::new(child.stdout.take().ok_or("stdout")?).lines();
    let waiters: Waiters = Arc::default();
    let send = |stdin: Arc<Mutex<ChildStdin>>, line: String| async move {
        let mut stdin = stdin.lock().await;
        stdin.write_all(line.as_bytes()).await?;
        stdin.write_all(b"\n").await?;
        stdin.flush().await
    };
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "loadgen", "version": "1"}}});
    send(Arc::clone(&stdin), init.to_string()).await?;
    lines.next_line().await?.ok_or("no initialize answer")?;
    send(
        Arc::clone(&stdin),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned(),
    )
    .await?;
    let reader_waiters = Arc::clone(&waiters);
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            let id = serde_json::from_str::<Value>(&line)
                .ok()
                .and_then(|v| v["id"].as_u64());
            if let Some(id) = id
                && let Some(waiter) = reader_waiters.lock().await.remove(&id)
            {
                let _ = waiter.send(line);
            }
        }
    });
    let cpu = cpu_time(child.id());
    let start = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|client| {
            let (stdin, waiters) = (Arc::clone(&stdin), Arc::clone(&waiters));
            tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(calls);
                for i in 0..calls {
                    let id = (client * calls + i + 1) as u64;
                    let (tx, rx) = oneshot::channel();
                    waiters.lock().await.insert(id, tx);
                    let line = format!(
                        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{CALL}}}"#
                    );
                    let sent = Instant::now();
                    send(Arc::clone(&stdin), line)
                        .await
                        .map_err(|e| e.to_string())?;
                    let answer = rx.await.map_err(|e| e.to_string())?;
                    latencies.push(checked(sent, &answer)?);
                }
                Ok::<_, String>(latencies)
            })
        })
        .collect();
    let mut run = summarize(gather(tasks).await?, start.elapsed());
    run.cpu_per_call = per_call(cpu, cpu_time(child.id()), clients * calls);
    let _ = child.kill().await;
    Ok(run)
}

/// KiB of resident memory per idle HTTP session.
async fn memory_per_session(
    child: &Child,
    url: &str,
    sessions: usize,
) -> Result<Option<f64>, Box<dyn std::error::Error>> {
    let Some(pid) = child.id() else {
        return Ok(None);
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = load_url::rss_kib(pid);
    let mut open = Vec::new();
    for _ in 0..sessions {
        open.push(Session::open(url).await?);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = load_url::rss_kib(pid);
    drop(open);
    Ok(before
        .zip(after)
        .map(|(b, a)| a.saturating_sub(b) as f64 / sessions as f64))
}

#[tokio::main]
async fn main() -> ExitCode {
    match run(Args::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    if let Some(url) = &args.url {
        return against(url, &args).await;
    }
    let dir = match args.bin_dir {
        Some(dir) => dir,
        None => std::env::current_exe()?
            .parent()
            .ok_or("no directory")?
            .to_owned(),
    };
    let servers = [
        ("abilities", dir.join("site")),
        ("rmcp", dir.join("rmcp_site")),
        ("bare", dir.join("bare_site")),
    ];
    for (_, bin) in &servers {
        if !bin.exists() {
            return Err(format!(
                "{} is missing: build the servers first (cargo build --release --workspace --examples)",
                bin.display()
            )
            .into());
        }
    }
    let tmp = std::env::temp_dir().join(format!("abilities-loadgen-{}", std::process::id()));
    std::fs::create_dir_all(&tmp)?;
    println!(
        "{} clients x {} calls of my-plugin-count-posts, median of {} rounds; {} idle sessions for memory",
        args.clients, args.calls, args.rounds, args.sessions
    );
    println!(
        "| transport | server | calls/s | p50 | p99 | server CPU per call | KiB per idle session |"
    );
    println!("|---|---|---|---|---|---|---|");
    let mut rates = HashMap::new();
    // The median of each figure on its own: the run of median throughput, with the median
    // of the CPU per call.
    let median = |mut runs: Vec<Run>| -> Run {
        let mut cpu: Vec<Duration> = runs.iter().filter_map(|r| r.cpu_per_call).collect();
        cpu.sort_unstable();
        runs.sort_by(|a, b| a.calls_per_sec.total_cmp(&b.calls_per_sec));
        let mut run = runs.swap_remove(runs.len() / 2);
        run.cpu_per_call = cpu.get(cpu.len() / 2).copied();
        run
    };
    let row = |transport: &str, name: &str, run: &Run, memory: &str| {
        let cpu = run.cpu_per_call.map_or_else(
            || "n/a".to_owned(),
            |cpu| format!("{:.1} us", cpu.as_secs_f64() * 1e6),
        );
        println!(
            "| {transport} | {name} | {:.0} | {:.2} ms | {:.2} ms | {cpu} | {memory} |",
            run.calls_per_sec,
            run.p50.as_secs_f64() * 1e3,
            run.p99.as_secs_f64() * 1e3,
        );
    };

    // HTTP: both servers up, rounds alternating which goes first.
    if args.transport != Transport::Stdio {
        let mut children = Vec::new();
        for (name, bin) in &servers {
            let (child, url) = start_http(bin, &tmp.join(format!("{name}-http.db"))).await?;
            http_run(&url, child.id(), args.clients, args.calls / 10 + 1).await?;
            children.push((name, child, url));
        }
        let mut http: Vec<Vec<Run>> = children.iter().map(|_| Vec::new()).collect();
        for round in 0..args.rounds {
            for k in 0..children.len() {
                let i = (k + round) % children.len();
                let (_, child, url) = &children[i];
                http[i].push(http_run(url, child.id(), args.clients, args.calls).await?);
            }
        }
        for ((name, child, url), runs) in children.iter().zip(http) {
            let memory = memory_per_session(child, url, args.sessions).await?;
            let run = median(runs);
            let memory = memory.map_or_else(|| "n/a".to_owned(), |m| format!("{m:.1}"));
            row("HTTP", name, &run, &memory);
            rates.insert(("http", **name), (run.calls_per_sec, run.cpu_per_call));
        }
        drop(children);
    }

    // stdio: one process per run.
    if args.transport != Transport::Http {
        let mut stdio: Vec<Vec<Run>> = servers.iter().map(|_| Vec::new()).collect();
        for round in 0..args.rounds {
            for k in 0..servers.len() {
                let i = (k + round) % servers.len();
                let (name, bin) = &servers[i];
                let db = tmp.join(format!("{name}-stdio.db"));
                stdio[i].push(stdio_run(bin, &db, args.clients, args.calls).await?);
            }
        }
        for ((name, _), runs) in servers.iter().zip(stdio) {
            let run = median(runs);
            row("stdio", name, &run, "");
            rates.insert(("stdio", *name), (run.calls_per_sec, run.cpu_per_call));
        }
        // The same calls written ahead, so the server, not the pipe, is the bound.
        let total = args.clients * args.calls;
        let mut bulk: Vec<Vec<Run>> = servers.iter().map(|_| Vec::new()).collect();
        for round in 0..args.rounds {
            for k in 0..servers.len() {
                let i = (k + round) % servers.len();
                let (name, bin) = &servers[i];
                let db = tmp.join(format!("{name}-bulk.db"));
                let run = stdio_bulk::run(bin, &db, total, CALL, cpu_time).await?;
                bulk[i].push(Run {
                    calls_per_sec: run.calls_per_sec,
                    p50: Duration::ZERO,
                    p99: Duration::ZERO,
                    cpu_per_call: run.cpu_per_call,
                });
            }
        }
        for ((name, _), runs) in servers.iter().zip(bulk) {
            let run = median(runs);
            row("stdio, written ahead", name, &run, "");
            rates.insert(
                ("stdio, written ahead", *name),
                (run.calls_per_sec, run.cpu_per_call),
            );
        }
    }
    println!();
    for transport in ["http", "stdio", "stdio, written ahead"] {
        if let (Some(ours), Some(theirs), Some(floor)) = (
            rates.get(&(transport, "abilities")),
            rates.get(&(transport, "rmcp")),
            rates.get(&(transport, "bare")),
        ) {
            println!(
                "{transport}: abilities / rmcp throughput = {:.2}x; abilities / bare = {:.2}x, rmcp / bare = {:.2}x",
                ours.0 / theirs.0,
                ours.0 / floor.0,
                theirs.0 / floor.0
            );
            if let (Some(ours), Some(theirs)) = (ours.1, theirs.1)
                && !theirs.is_zero()
            {
                println!(
                    "{transport}: server CPU per call, abilities / rmcp = {:.2}x",
                    ours.as_secs_f64() / theirs.as_secs_f64()
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    Ok(())
}

/// `--url`: load the running server at `url`.
async fn against(url: &str, args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    if let Some(count) = args.confirm {
        let (p50, p99) = load_url::confirmed_deletes(url, count)
            .await
            .map_err(|e| e.to_string())?;
        println!(
            "{count} confirmed deletions at {url}: p50 {:.2} ms, p99 {:.2} ms (ask and redeem)",
            ms(p50),
            ms(p99)
        );
        return Ok(());
    }
    let arguments: Value = serde_json::from_str(&args.arguments)?;
    let window = match args.seconds {
        Some(seconds) => load_url::Window::Time(Duration::try_from_secs_f64(seconds)?),
        None => load_url::Window::Calls(args.calls),
    };
    let mut rates = Vec::new();
    for _ in 0..args.rounds.max(1) {
        rates.push(
            load_url::calls(
                url,
                args.protocol,
                &args.tool,
                &arguments,
                args.clients,
                window,
            )
            .await
            .map_err(|e| e.to_string())?,
        );
    }
    rates.sort_by(|a, b| a.rate.total_cmp(&b.rate));
    let load_url::Measured {
        calls,
        rate,
        latency: [p50, p95, p99],
    } = rates[rates.len() / 2];
    let each = match window {
        load_url::Window::Calls(calls) => format!("{calls} calls"),
        load_url::Window::Time(time) => format!("{:.1} s", time.as_secs_f64()),
    };
    println!(
        "{} clients x {each} of {} at {url}, median of {} rounds: {rate:.0} calls/s, p50 {:.2} ms, p95 {:.2} ms, p99 {:.2} ms ({calls} calls)",
        args.clients,
        args.tool,
        rates.len(),
        ms(p50),
        ms(p95),
        ms(p99)
    );
    Ok(())
}
