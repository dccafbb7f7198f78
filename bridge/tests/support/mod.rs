//! The bridge's test rig: `examples/upstream.rs` as child processes behind a bridge, and a
//! downstream client that records what reaches it.

#![allow(
    dead_code,
    unreachable_pub,
    deprecated,
    reason = "each test file uses part of the rig; upstreams of today's protocol versions log"
)]

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use abilities::protocol::rmcp::model::{
    CallToolRequestParams, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ErrorData, LoggingMessageNotificationParam,
    ProgressNotificationParam,
};
use abilities::protocol::rmcp::service::{NotificationContext, RequestContext, RunningService};
use abilities::protocol::rmcp::{ClientHandler, RoleClient, ServiceExt};
use abilities::{Server, Surface};
use abilities_bridge::{Bridge, Config, Timing};
use serde_json::{Value, json};

/// The test upstream, built by `cargo test` beside this test's binary.
pub fn upstream_bin() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>");
    let bin = dir.join("examples").join("upstream");
    assert!(
        bin.exists(),
        "{} is missing: run `cargo test -p abilities-bridge`, which builds the examples",
        bin.display()
    );
    bin
}

/// A server entry running the test upstream with `args`.
pub fn upstream(args: &[&str]) -> Value {
    json!({"command": upstream_bin(), "args": args})
}

/// Quick restarts and a short start limit.
pub fn timing() -> Timing {
    Timing {
        start_timeout: Duration::from_secs(5),
        backoff: Duration::from_millis(50),
        max_backoff: Duration::from_millis(200),
    }
}

/// A bridge over `config` (`{"mcpServers": ...}`) serving `surface`.
pub async fn bridge(config: Value, surface: Surface) -> (Server, Bridge) {
    bridge_with(config, surface, timing()).await
}

/// A bridge with its own timing.
pub async fn bridge_with(config: Value, surface: Surface, timing: Timing) -> (Server, Bridge) {
    let config = Config::parse(&config.to_string()).expect("a valid configuration");
    let server = Server::builder()
        .name("bridge", "1")
        .surface(surface)
        .timeout(Some(Duration::from_secs(10)))
        .metrics(abilities::metrics::MetricsConfig::default())
        .build()
        .expect("builds");
    let bridge = Bridge::start(config, server.clone(), timing).await;
    (server, bridge)
}

/// What reached the downstream client.
#[derive(Default)]
pub struct Seen {
    pub progress: Vec<(f64, Option<String>)>,
    pub logs: Vec<Value>,
    pub tools_changed: usize,
}

/// A downstream client that answers elicitation with `{"name": "ada"}` and sampling with
/// `echo: <prompt>` when it declares them,
/// and records progress, logs and list changes.
#[derive(Clone)]
pub struct Recorder {
    pub elicitation: bool,
    pub protocol: &'static str,
    pub seen: Arc<Mutex<Seen>>,
}

impl ClientHandler for Recorder {
    fn get_info(&self) -> ClientConfig {
        let capabilities = if self.elicitation {
            json!({"elicitation": {}, "sampling": {}})
        } else {
            json!({})
        };
        serde_json::from_value(json!({
            "protocolVersion": self.protocol,
            "capabilities": capabilities,
            "clientInfo": {"name": "recorder", "version": "1"}
        }))
        .expect("a client config")
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let asked = serde_json::to_value(&request).expect("serializes");
        assert_eq!(asked["message"], "What is your name?");
        Ok(
            serde_json::from_value(json!({"action": "accept", "content": {"name": "ada"}}))
                .expect("a result"),
        )
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let asked = serde_json::to_value(&params).expect("serializes");
        let prompt = asked["messages"][0]["content"]["text"]
            .as_str()
            .unwrap_or_default();
        Ok(serde_json::from_value(json!({
            "role": "assistant",
            "content": {"type": "text", "text": format!("echo: {prompt}")},
            "model": "test-model"
        }))
        .expect("a result"))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let mut seen = self.seen.lock().expect("unpoisoned");
        seen.progress.push((params.progress, params.message));
    }

    #[allow(deprecated, reason = "upstreams of today's protocol versions log")]
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.seen.lock().expect("unpoisoned").logs.push(params.data);
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.seen.lock().expect("unpoisoned").tools_changed += 1;
    }
}

/// Connect a [`Recorder`] to `server` (protocol 2025-11-25).
pub async fn connect(
    server: &Server,
    elicitation: bool,
) -> (RunningService<RoleClient, Recorder>, Arc<Mutex<Seen>>) {
    connect_with(server, elicitation, "2025-11-25").await
}

/// Connect a [`Recorder`] speaking `protocol`.
pub async fn connect_with(
    server: &Server,
    elicitation: bool,
    protocol: &'static str,
) -> (RunningService<RoleClient, Recorder>, Arc<Mutex<Seen>>) {
    let handler = server.handler(None);
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        if let Ok(running) = handler.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let seen = Arc::new(Mutex::new(Seen::default()));
    let client = Recorder {
        elicitation,
        protocol,
        seen: Arc::clone(&seen),
    }
    .serve(client_io)
    .await
    .expect("connects");
    (client, seen)
}

/// `tools/call` as JSON.
pub async fn call(client: &RunningService<RoleClient, Recorder>, name: &str, args: Value) -> Value {
    let Value::Object(args) = args else {
        panic!("arguments are an object")
    };
    let result = client
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(args))
        .await
        .expect("answers");
    serde_json::to_value(result).expect("serializes")
}

/// The `{code, message, details}` of a tool error.
pub fn error_of(result: &Value) -> Value {
    assert_eq!(result["isError"], true, "an error: {result}");
    let text = result["content"][0]["text"].as_str().expect("a text block");
    serde_json::from_str(text).expect("the error as JSON")
}

/// Poll the status ability until `server` is `status`.
pub async fn wait_for(bridge: &Bridge, server: &str, status: &str) {
    for _ in 0..200 {
        let all = bridge.status();
        let now = all
            .as_array()
            .and_then(|a| a.iter().find(|s| s["server"] == server))
            .map(|s| s["status"].clone());
        if now == Some(json!(status)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{server} never became {status}: {}", bridge.status());
}
