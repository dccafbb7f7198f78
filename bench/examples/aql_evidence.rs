// cargo build -p abilities-examples --example todo && cargo run -p abilities-bench --example aql_evidence -- --mode aql-single
//! An MCP-AQL conformance evidence bundle, as the specification's runner
//! (`scripts/run-conformance-tests.mjs` in MCPAQL/spec) grades it, made from the live answers
//! of the `todo` example: it starts the example over stdio on a fresh database, makes the
//! requests each section of the bundle asks for and writes their answers as they came.
//!
//! - introspection: the operation list, the type list and every operation's detail;
//! - accepted parameters: every documented parameter, and a few an agent might try
//!   (`site_id`, `confirmation_token`, `fields`, `page_size`...), sent one at a time: a
//!   parameter is accepted when the answer is not `VALIDATION_UNKNOWN_PARAM` naming it;
//! - parameter and error cases, a create-read round trip, an update that keeps the other
//!   fields, a batch, and the constraints the example enforces (documented when its
//!   introspection states them).
//!
//! No semantic (model transcript) evidence: no model runs here.
//!
//! `--out FILE` writes the bundle; `--check FILE` compares it with a committed one and exits
//! non-zero when the server no longer answers what the file says.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitCode, Stdio};

use clap::{Parser, ValueEnum};
use serde_json::{Map, Value, json};

/// Write (or check) the MCP-AQL evidence bundle of the `todo` example.
#[derive(Parser)]
struct Args {
    /// Which MCP-AQL mode to serve and record.
    #[arg(long, value_enum)]
    mode: Mode,
    /// Write the bundle here (default: standard output).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Compare with this committed bundle instead; exit 1 if it differs.
    #[arg(long, conflicts_with = "out")]
    check: Option<PathBuf>,
    /// Where the `todo` example binary is (default: beside this one).
    #[arg(long)]
    bin_dir: Option<PathBuf>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Mode {
    /// One `mcp_aql` tool.
    AqlSingle,
    /// The CRUDE endpoints, one tool per family.
    AqlCrude,
}

impl Mode {
    fn flag(self) -> &'static str {
        match self {
            Self::AqlSingle => "aql-single",
            Self::AqlCrude => "aql-crude",
        }
    }
}

/// Parameters an agent might send that an operation may or may not take.
const PROBES: [&str; 7] = [
    "site_id",
    "confirmation_token",
    "fields",
    "include",
    "input",
    "page_size",
    "query",
];

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let dir = match &args.bin_dir {
        Some(dir) => dir.clone(),
        None => std::env::current_exe()?
            .parent()
            .ok_or("no directory beside this binary")?
            .to_owned(),
    };
    let bin = dir.join("todo");
    let bundle = bundle(&bin, args.mode)?;
    let text = format!("{}\n", serde_json::to_string_pretty(&bundle)?);
    if let Some(committed) = &args.check {
        let was = std::fs::read_to_string(committed)
            .map_err(|e| format!("cannot read {}: {e}", committed.display()))?;
        if was == text {
            println!(
                "{}: the server answers what the bundle says",
                committed.display()
            );
            return Ok(ExitCode::SUCCESS);
        }
        let fresh = committed.with_extension("fresh.json");
        std::fs::write(&fresh, &text)?;
        eprintln!(
            "{} no longer matches the server's answers; the fresh bundle is in {} (diff them, then copy it over if the change is intended)",
            committed.display(),
            fresh.display()
        );
        return Ok(ExitCode::FAILURE);
    }
    match &args.out {
        Some(path) => std::fs::write(path, text)?,
        None => std::io::stdout().write_all(text.as_bytes())?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The `todo` example over stdio, on a database of its own.
struct Server {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    next: u64,
    _dir: TempDir,
    mode: Mode,
    /// The family (endpoint) of each operation, for the CRUDE tools.
    families: BTreeMap<String, String>,
}

/// A directory removed when dropped.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn start(bin: &std::path::Path, mode: Mode) -> Result<Self, Box<dyn std::error::Error>> {
        let dir = std::env::temp_dir().join(format!(
            "abilities-aql-evidence-{}-{}",
            mode.flag(),
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        let mut child = Command::new(bin)
            .args(["--mode", mode.flag(), "--db"])
            .arg(dir.join("todo.db"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| {
                format!(
                    "cannot start {} ({e}): build it with `cargo build -p abilities-examples --example todo`",
                    bin.display()
                )
            })?;
        let input = child.stdin.take().ok_or("no stdin")?;
        let output = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let mut server = Self {
            child,
            input,
            output,
            next: 0,
            _dir: TempDir(dir),
            mode,
            families: BTreeMap::new(),
        };
        server.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "aql-evidence", "version": "1"}}),
        )?;
        server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        Ok(server)
    }

    fn send(&mut self, message: &Value) -> Result<(), Box<dyn std::error::Error>> {
        writeln!(self.input, "{message}")?;
        self.input.flush()?;
        Ok(())
    }

    fn request(
        &mut self,
        method: &str,
        params: Value,
    ) -> Result<Value, Box<dyn std::error::Error>> {
        self.next += 1;
        let id = self.next;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        loop {
            let mut line = String::new();
            if self.output.read_line(&mut line)? == 0 {
                return Err("the server closed its output".into());
            }
            let message: Value = serde_json::from_str(&line)?;
            if message["id"] == id {
                if let Some(error) = message.get("error") {
                    return Err(format!("{method} failed: {error}").into());
                }
                return Ok(message["result"].clone());
            }
        }
    }

    /// The tool names the server lists.
    fn tools(&mut self) -> Result<Vec<String>, Box<dyn std::error::Error>> {
        let list = self.request("tools/list", json!({}))?;
        Ok(list["tools"]
            .as_array()
            .ok_or("no tools")?
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect())
    }

    /// The envelope `operation` answers with `params`, through the tool that serves it.
    fn op(&mut self, operation: &str, params: Value) -> Result<Value, Box<dyn std::error::Error>> {
        self.call(json!({"operation": operation, "params": params}), operation)
    }

    fn call(&mut self, args: Value, operation: &str) -> Result<Value, Box<dyn std::error::Error>> {
        let tool = match self.mode {
            Mode::AqlSingle => "mcp_aql".to_owned(),
            Mode::AqlCrude => {
                let family = self.families.get(operation).map_or("read", String::as_str);
                format!("mcp_aql_{family}")
            }
        };
        let result = self.request("tools/call", json!({"name": tool, "arguments": args}))?;
        let text = result["content"][0]["text"]
            .as_str()
            .ok_or("an answer without text")?;
        Ok(serde_json::from_str(text)?)
    }
}

/// A plausible value for a parameter, from its introspected description.
fn sample(parameter: &Value) -> Value {
    if let Some(default) = parameter.get("default") {
        return default.clone();
    }
    if let Some(first) = parameter["enum"].as_array().and_then(|e| e.first()) {
        return first.clone();
    }
    match parameter["type"].as_str() {
        Some("integer" | "number") => json!(1),
        Some("boolean") => json!(false),
        Some("array") => json!([]),
        Some("object") => json!({}),
        _ => json!("x"),
    }
}

/// Whether `answer` refuses `parameter` as unknown: named in the details, or in the message
/// where there are none (introspection's errors are code and message only).
fn unknown(answer: &Value, parameter: &str) -> bool {
    let error = &answer["error"];
    error["code"] == "VALIDATION_UNKNOWN_PARAM"
        && match error["details"]["unknown_params"].as_array() {
            Some(listed) => listed.iter().any(|p| p == parameter),
            None => error["message"]
                .as_str()
                .is_some_and(|m| m.contains(parameter)),
        }
}

fn bundle(bin: &std::path::Path, mode: Mode) -> Result<Value, Box<dyn std::error::Error>> {
    // Level 2 asks for both endpoint modes: each is checked to serve its tools.
    let mut endpoint_modes = Vec::new();
    for (other, expected, name) in [
        (Mode::AqlCrude, "mcp_aql_read", "crude"),
        (Mode::AqlSingle, "mcp_aql", "single"),
    ] {
        if Server::start(bin, other)?
            .tools()?
            .iter()
            .any(|t| t == expected)
        {
            endpoint_modes.push(name);
        }
    }

    let mut server = Server::start(bin, mode)?;
    let operations_list = server.op("introspect", json!({"query": "operations"}))?;
    let types_list = server.op("introspect", json!({"query": "types"}))?;
    let protocol = operations_list["data"]["_protocol"].clone();
    let names: Vec<String> = operations_list["data"]["operations"]
        .as_array()
        .ok_or("no operations listed")?
        .iter()
        .map(|o| {
            let name = o["name"].as_str().unwrap_or_default().to_owned();
            let family = o["endpoint"].as_str().unwrap_or("read").to_owned();
            server.families.insert(name.clone(), family);
            name
        })
        .collect();

    let mut details = Vec::new();
    for name in &names {
        let detail = server.op("introspect", json!({"query": "operations", "name": name}))?;
        details.push(detail["data"]["operation"].clone());
    }

    // Accepted parameters: each documented one and each probe, sent alone beside the
    // required ones of the operation's own example.
    let mut accepted = Map::new();
    let mut missing_required = Vec::new();
    let mut unknown_parameter = Vec::new();
    for detail in &details {
        let name = detail["name"].as_str().unwrap_or_default().to_owned();
        let parameters = detail["parameters"].as_array().cloned().unwrap_or_default();
        let required: Map<String, Value> = parameters
            .iter()
            .filter(|p| p["required"] == true)
            .map(|p| {
                let key = p["name"].as_str().unwrap_or_default().to_owned();
                let value = detail["examples"][0]["request"]["params"]
                    .get(&key)
                    .cloned()
                    .unwrap_or_else(|| sample(p));
                (key, value)
            })
            .collect();
        let mut candidates: Vec<(String, Value)> = parameters
            .iter()
            .map(|p| (p["name"].as_str().unwrap_or_default().to_owned(), sample(p)))
            .collect();
        for probe in PROBES {
            if !candidates.iter().any(|(n, _)| n == probe) {
                candidates.push((probe.to_owned(), json!("x")));
            }
        }
        let mut taken = Vec::new();
        for (parameter, value) in candidates {
            let mut params = required.clone();
            params.insert(parameter.clone(), value);
            let answer = server.op(&name, Value::Object(params))?;
            if !unknown(&answer, &parameter) {
                taken.push(json!(parameter));
            }
        }
        accepted.insert(name.clone(), Value::Array(taken));

        for parameter in parameters.iter().filter(|p| p["required"] == true) {
            let key = parameter["name"].as_str().unwrap_or_default();
            let mut params = required.clone();
            params.remove(key);
            missing_required.push(json!({
                "operation": name,
                "parameter": key,
                "response": server.op(&name, Value::Object(params))?,
            }));
        }
        let mut params = required.clone();
        params.insert("page_size".into(), json!(10));
        unknown_parameter.push(json!({
            "operation": name,
            "parameter": "page_size",
            "response": server.op(&name, Value::Object(params))?,
        }));
    }

    // A documented default, as an answer shows it.
    let created = server.op("create_todo", json!({"title": "Evidence defaults"}))?;
    let optional_defaults = vec![json!({
        "operation": "create_todo",
        "parameter": "priority",
        "expected_value_path": "data.priority",
        "expected_value": "medium",
        "response": created,
    })];

    let error_tests = vec![
        json!({
            "name": "unknown-parameter",
            "must_mention": ["page_size", "id"],
            "response": server.op("get_todo", json!({"id": 1, "page_size": 10}))?,
        }),
        json!({
            "name": "missing-parameter",
            "must_mention": ["id"],
            "response": server.op("get_todo", json!({}))?,
        }),
        json!({
            "name": "wrong-type",
            "must_mention": ["id"],
            "response": server.op("get_todo", json!({"id": "four"}))?,
        }),
        json!({
            "name": "not-found",
            "must_mention": ["999"],
            "response": server.op("get_todo", json!({"id": 999}))?,
        }),
        json!({
            "name": "unknown-operation",
            "must_mention": ["get_todos", "introspect"],
            "response": server.op("get_todos", json!({"id": 1}))?,
        }),
        json!({
            "name": "update-null",
            "must_mention": ["input.priority"],
            "response": server.op("update_todo", json!({"id": 1, "input": {"priority": null}}))?,
        }),
    ];

    // Create, then read back; update one field, then read the others back.
    let made = server.op(
        "create_todo",
        json!({"title": "Evidence round trip", "priority": "high"}),
    )?;
    let id = made["data"]["id"].clone();
    let read = server.op("get_todo", json!({"id": id}))?;
    let round_trip_tests = vec![json!({
        "name": "create-then-get",
        "expected_fields": {"data.title": "Evidence round trip", "data.priority": "high", "data.completed": false},
        "read_response": read,
    })];
    server.op(
        "update_todo",
        json!({"id": id, "input": {"completed": true}}),
    )?;
    let after = server.op("get_todo", json!({"id": id}))?;
    let update_preservation_tests = vec![json!({
        "name": "complete-keeps-title-and-priority",
        "preserved_fields": {"data.title": "Evidence round trip", "data.priority": "high"},
        "read_response": after,
    })];

    let batch_example = server.call(
        json!({"operations": [
            {"operation": "get_todo", "params": {"id": 1, "fields": ["id", "title"]}},
            {"operation": "list_todos", "params": {"filter": {"priority": "high"}, "fields": ["id"]}}
        ]}),
        "get_todo",
    )?;

    // Constraints the example enforces, documented when introspection states them.
    let param = |operation: &str, parameter: &str| -> Value {
        details
            .iter()
            .find(|d| d["name"] == operation)
            .and_then(|d| d["parameters"].as_array())
            .and_then(|ps| ps.iter().find(|p| p["name"] == parameter))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let constraint_tests = vec![
        json!({
            "name": "title-not-empty",
            "documented": param("create_todo", "title").get("minLength").is_some(),
            "response": server.op("create_todo", json!({"title": ""}))?,
        }),
        json!({
            "name": "priority-is-one-of-three",
            "documented": param("create_todo", "priority").get("enum").is_some(),
            "response": server.op("create_todo", json!({"title": "x", "priority": "urgent"}))?,
        }),
        json!({
            "name": "page-at-most-100",
            "documented": param("list_todos", "limit").get("maximum").is_some(),
            "response": server.op("list_todos", json!({"limit": 500}))?,
        }),
        json!({
            "name": "update-fields-cannot-be-cleared",
            "documented": param("update_todo", "input")["description"]
                .as_str()
                .is_some_and(|d| d.contains("null is refused")),
            "response": server.op("update_todo", json!({"id": 1, "input": {"title": null}}))?,
        }),
    ];

    Ok(json!({
        "implementation": format!("abilities {} (todo example, {})", env!("CARGO_PKG_VERSION"), mode.flag()),
        "version": env!("CARGO_PKG_VERSION"),
        "spec_version": protocol["version"],
        "expected_level": 2,
        "expected_exit_code": 0,
        "endpoint_modes": endpoint_modes,
        "capabilities": {
            "field_selection": protocol["capabilities"]["field_selection"],
            "batch_operations": protocol["capabilities"]["batch"],
        },
        "introspection": {
            "operations_list": operations_list,
            "types_list": types_list,
            "operation_details": details,
        },
        "accepted_parameters": accepted,
        "parameter_tests": {
            "missing_required": missing_required,
            "unknown_parameter": unknown_parameter,
            "optional_defaults": optional_defaults,
        },
        "error_tests": error_tests,
        "round_trip_tests": round_trip_tests,
        "update_preservation_tests": update_preservation_tests,
        "batch_example": batch_example,
        "constraint_tests": constraint_tests,
    }))
}
