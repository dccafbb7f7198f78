//! What the bridge saves a model, in o200k_base tokens of the exact JSON a client receives:
//! the upstreams' own `tools/list` results together against the bridge's native, CRUDE and
//! single ones; then ten tasks done both ways (native: the list, then one call per task;
//! MCP-AQL single: the list, `introspect` of what the tasks need, then the calls; both with
//! their confirmations), counting everything the model reads.
//!
//! `cargo run -p abilities-bridge --example bridge_tokens -- --config C --files DIR [--check]`
//! needs the configuration of `tests/interop/run.sh`: servers named `everything`,
//! `filesystem` (serving DIR), `memory` and `time`. `--check` exits non-zero when single mode
//! is not at least 95% below the upstreams' own lists.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use abilities::protocol::rmcp::ServiceExt;
use abilities::protocol::rmcp::transport::TokioChildProcess;
use abilities::{
    Server, Surface,
    aql::{Aql, AqlMode},
    testing::TestClient,
};
use abilities_bridge::{Bridge, Config, Launch, Timing};
use serde_json::{Value, json};

struct Args {
    config: PathBuf,
    files: PathBuf,
    check: bool,
}

fn args() -> Option<Args> {
    let mut args = std::env::args().skip(1);
    let (mut config, mut files, mut check) = (None, None, false);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--config" => config = args.next().map(PathBuf::from),
            "--files" => files = args.next().map(PathBuf::from),
            "--check" => check = true,
            _ => return None,
        }
    }
    Some(Args {
        config: config?,
        files: files?,
        check,
    })
}

/// The ten tasks: (what, native tool, arguments). MCP-AQL calls the same operation.
fn tasks(files: &std::path::Path) -> Vec<(&'static str, &'static str, Value)> {
    let path = files.join("notes.txt").display().to_string();
    vec![
        (
            "echo a message",
            "everything-echo",
            json!({"message": "hello"}),
        ),
        (
            "add two numbers",
            "everything-get-sum",
            json!({"a": 19, "b": 23}),
        ),
        (
            "write a file",
            "filesystem-write_file",
            json!({"path": path, "content": "buy milk"}),
        ),
        (
            "read it back",
            "filesystem-read_text_file",
            json!({"path": path}),
        ),
        (
            "list the directory",
            "filesystem-list_directory",
            json!({"path": files.display().to_string()}),
        ),
        (
            "remember a person",
            "memory-create_entities",
            json!({"entities": [{"name": "Grace Hopper", "entityType": "person", "observations": ["found a moth"]}]}),
        ),
        (
            "add what we learnt",
            "memory-add_observations",
            json!({"observations": [{"entityName": "Grace Hopper", "contents": ["wrote COBOL"]}]}),
        ),
        (
            "find her again",
            "memory-search_nodes",
            json!({"query": "COBOL"}),
        ),
        (
            "the time in Tokyo",
            "time-get_current_time",
            json!({"timezone": "Asia/Tokyo"}),
        ),
        (
            "convert a time",
            "time-convert_time",
            json!({"source_timezone": "Europe/Paris", "time": "09:30", "target_timezone": "America/New_York"}),
        ),
    ]
}

fn count(bpe: &tiktoken_rs::CoreBPE, value: &Value) -> usize {
    bpe.encode_ordinary(&value.to_string()).len()
}

/// `tools/list` of one upstream, as it answers itself.
async fn own_list(launch: &Launch) -> Result<Value, Box<dyn std::error::Error>> {
    let Launch::Stdio {
        command,
        args,
        env,
        cwd,
    } = launch
    else {
        return Err("only stdio upstreams are measured".into());
    };
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(args).envs(env);
    if let Some(cwd) = cwd {
        cmd.current_dir(cwd);
    }
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::null())
        .spawn()?;
    // Declaring what the bridge declares: some servers list more tools to such clients.
    let info: abilities::protocol::rmcp::model::ClientConfig = serde_json::from_value(json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {"elicitation": {"form": {}}, "sampling": {}},
        "clientInfo": {"name": "bridge_tokens", "version": "1"}
    }))?;
    let client = info.serve(transport).await?;
    let tools = client.list_all_tools().await?;
    let _ = client.cancel().await;
    Ok(json!({"tools": tools}))
}

async fn tools_list(server: &Server) -> Value {
    json!({"tools": server.tools()})
}

async fn call(
    client: &TestClient,
    name: &str,
    args: Value,
) -> Result<Value, Box<dyn std::error::Error>> {
    let result = client.call(name, args).await?;
    Ok(serde_json::to_value(result)?)
}

#[tokio::main]
async fn main() -> ExitCode {
    let Some(args) = args() else {
        eprintln!("usage: bridge_tokens --config FILE --files DIR [--check]");
        return ExitCode::from(2);
    };
    match run(args).await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("bridge_tokens: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<bool, Box<dyn std::error::Error>> {
    let bpe = tiktoken_rs::o200k_base()?;
    let config = Config::load(&args.config)?;
    let mut own_total = 0;
    println!("{:<28} {:>7} {:>7}", "tools/list", "tools", "tokens");
    for (name, upstream) in &config.servers {
        let list = own_list(&upstream.launch).await?;
        let tokens = count(&bpe, &list);
        own_total += tokens;
        let n = list["tools"].as_array().map_or(0, Vec::len);
        println!("{:<28} {n:>7} {tokens:>7}", format!("{name} (its own)"));
    }
    println!("{:<28} {:>7} {own_total:>7}", "the four together", "");

    let server = Server::builder()
        .name("abilities-bridge", "1")
        .surface(Surface::Native)
        .timeout(Some(Duration::from_secs(30)))
        .build()?;
    let bridge = Bridge::start(config, server.clone(), Timing::default()).await;
    let single = server.with_surface(Surface::Aql(Aql::new(AqlMode::Single)))?;
    let crude = server.with_surface(Surface::Aql(Aql::new(AqlMode::Semantic)))?;
    let mut single_tokens = 0;
    for (label, surface) in [
        ("bridge, native", &server),
        ("bridge, MCP-AQL CRUDE", &crude),
        ("bridge, MCP-AQL single", &single),
    ] {
        let list = tools_list(surface).await;
        let tokens = count(&bpe, &list);
        let n = list["tools"].as_array().map_or(0, Vec::len);
        println!(
            "{label:<28} {n:>7} {tokens:>7}  ({:.1}% of the upstreams')",
            100.0 * tokens as f64 / own_total as f64
        );
        single_tokens = tokens;
    }
    let _ = bridge;

    // The session, native: the list once, then each call's result (a destructive one
    // answers CONFIRMATION_REQUIRED first, as on MCP-AQL, and is sent again with its token).
    let tasks = tasks(&args.files);
    let native = server.connect().await?;
    let native_list = count(&bpe, &tools_list(&server).await);
    let mut native_results = 0;
    for (what, tool, arguments) in &tasks {
        let mut result = call(&native, tool, arguments.clone()).await?;
        let error: Value =
            serde_json::from_str(result["content"][0]["text"].as_str().unwrap_or("null"))
                .unwrap_or(Value::Null);
        if result["isError"] == true && error["code"] == "CONFIRMATION_REQUIRED" {
            native_results += count(&bpe, &result);
            let mut confirmed = arguments.clone();
            confirmed["_confirmation"] = error["details"]["confirmation_token"].clone();
            result = call(&native, tool, confirmed).await?;
        }
        if result["isError"] == true {
            return Err(format!("native {what}: {result}").into());
        }
        native_results += count(&bpe, &result);
    }
    // The session, MCP-AQL single: the list, the operations, the detail of each one used, the
    // calls (a destructive one answers CONFIRMATION_REQUIRED first and is sent again).
    let aql = single.connect().await?;
    let aql_list = count(&bpe, &tools_list(&single).await);
    let overview = call(
        &aql,
        "mcp_aql",
        json!({"operation": "introspect", "params": {"query": "operations"}}),
    )
    .await?;
    let mut introspection = count(&bpe, &overview);
    let mut aql_results = 0;
    for (what, tool, arguments) in &tasks {
        let operation = abilities::aql::operation_name(&tool.replacen('-', "/", 1));
        let detail = call(&aql, "mcp_aql", json!({"operation": "introspect", "params": {"query": "operations", "name": operation}})).await?;
        introspection += count(&bpe, &detail);
        let mut request = json!({"operation": operation, "params": arguments});
        let mut result = call(&aql, "mcp_aql", request.clone()).await?;
        let envelope: Value =
            serde_json::from_str(result["content"][0]["text"].as_str().unwrap_or("null"))?;
        if envelope["error"]["code"] == "CONFIRMATION_REQUIRED" {
            aql_results += count(&bpe, &result);
            request["params"]["_confirmation"] = envelope["confirmation"]["token"].clone();
            result = call(&aql, "mcp_aql", request).await?;
        }
        let envelope: Value =
            serde_json::from_str(result["content"][0]["text"].as_str().unwrap_or("null"))?;
        if envelope["success"] != true {
            return Err(format!("MCP-AQL {what}: {envelope}").into());
        }
        aql_results += count(&bpe, &result);
    }
    let native_total = native_list + native_results;
    let aql_total = aql_list + introspection + aql_results;
    println!();
    println!("10-task session        list  introspection  results   total");
    println!(
        "native            {native_list:>8} {:>14} {native_results:>8} {native_total:>7}",
        0
    );
    println!(
        "MCP-AQL single    {aql_list:>8} {introspection:>14} {aql_results:>8} {aql_total:>7}  ({:.1}% of native)",
        100.0 * aql_total as f64 / native_total as f64
    );
    let saved = 100.0 - 100.0 * single_tokens as f64 / own_total as f64;
    let met = saved >= 95.0;
    if args.check {
        if met {
            println!(
                "budget met: single mode's tools/list is {saved:.1}% below the upstreams' own lists (at least 95%)"
            );
        } else {
            println!(
                "budget MISSED: single mode's tools/list is only {saved:.1}% below the upstreams' own lists (95% needed)"
            );
        }
    }
    Ok(met || !args.check)
}
