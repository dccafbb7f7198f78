//! The audit trail: one structured event per call on every surface, and one per
//! confirmation token issued or redeemed, on the `tracing` target `abilities::audit` and,
//! when configured, as JSON lines in a sink of the server's.
//!
//! An event names who called what and how it ended, never the arguments themselves: they
//! appear as the SHA-256 of their canonical JSON, with the values of parameters marked
//! `#[param(sensitive)]` replaced by a marker first (a digest of a short secret is as good as
//! the secret).

use std::io::Write;
use std::sync::mpsc;

use serde_json::{Map, Value, json};

/// The `tracing` target of audit events.
pub const AUDIT_TARGET: &str = "abilities::audit";

/// Where events go besides `tracing`.
pub(crate) struct Audit {
    /// Lines for the writer thread; `None` without a sink.
    sink: Option<mpsc::Sender<String>>,
}

impl Audit {
    /// An audit trail writing JSON lines to `sink` (on a thread of its own, so a slow disk
    /// never holds a call), or only to `tracing`.
    pub(crate) fn new(sink: Option<Box<dyn Write + Send>>) -> std::io::Result<Self> {
        let Some(mut writer) = sink else {
            return Ok(Self { sink: None });
        };
        let (tx, rx) = mpsc::channel::<String>();
        std::thread::Builder::new()
            .name("abilities-audit".to_owned())
            .spawn(move || {
                while let Ok(line) = rx.recv() {
                    let mut write = |line: String| {
                        if let Err(error) = writer
                            .write_all(line.as_bytes())
                            .and_then(|()| writer.write_all(b"\n"))
                        {
                            tracing::error!(%error, "an audit event could not be written");
                        }
                    };
                    write(line);
                    // What queued meanwhile goes out before the one flush.
                    while let Ok(line) = rx.try_recv() {
                        write(line);
                    }
                    if let Err(error) = writer.flush() {
                        tracing::error!(%error, "the audit log could not be flushed");
                    }
                }
            })?;
        Ok(Self { sink: Some(tx) })
    }

    /// Whether anything records events: a sink, or a `tracing` subscriber for the target.
    pub(crate) fn enabled(&self) -> bool {
        self.sink.is_some() || tracing::enabled!(target: AUDIT_TARGET, tracing::Level::INFO)
    }

    /// Record `event` (an object whose `event` key names its kind), stamped with the time.
    pub(crate) fn record(&self, mut event: Map<String, Value>) {
        let time = crate::clock::utc(crate::clock::now_ms(), true);
        event.insert("time".to_owned(), Value::String(time));
        let line = Value::Object(event);
        tracing::info!(target: AUDIT_TARGET, event = %line);
        if let Some(sink) = &self.sink
            && sink.send(line.to_string()).is_err()
        {
            tracing::error!("the audit log's writer stopped; an event was not written");
        }
    }
}

/// A call's audit event: what is known when it starts, finished with its outcome.
pub(crate) struct CallEvent {
    started: std::time::Instant,
    fields: Map<String, Value>,
}

impl CallEvent {
    /// The event of a call of `ability` through `ctx` with wire `args`.
    pub(crate) fn start(ability: &crate::Ability, ctx: &crate::Context, args: &Value) -> Self {
        let mut fields = Map::with_capacity(10);
        fields.insert("event".to_owned(), json!("call"));
        fields.insert("request_id".to_owned(), json!(ctx.request_id()));
        fields.insert("principal".to_owned(), json!(ctx.caller().principal()));
        fields.insert("surface".to_owned(), json!(ctx.via()));
        fields.insert("ability".to_owned(), json!(ability.name()));
        fields.insert("semantic".to_owned(), json!(ability.semantic().as_str()));
        fields.insert("args_sha256".to_owned(), json!(args_digest(ability, args)));
        Self {
            started: std::time::Instant::now(),
            fields,
        }
    }

    /// Record the call as ended with `outcome` (`OK`, or the error's code).
    pub(crate) fn finish(mut self, audit: &Audit, outcome: Result<(), &crate::AbilityError>) {
        let code = match outcome {
            Ok(()) => "OK",
            Err(error) => error.code().as_str(),
        };
        self.fields.insert("outcome".to_owned(), json!(code));
        let micros = u64::try_from(self.started.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.fields
            .insert("duration_ms".to_owned(), json!(micros as f64 / 1000.0));
        audit.record(self.fields);
    }
}

/// SHA-256 (hex) of the canonical JSON of `args`, their sensitive values replaced by one
/// marker (calls that differ only in a secret have the same digest).
fn args_digest(ability: &crate::Ability, args: &Value) -> String {
    let digest = match args {
        Value::Object(map) => match ability.redacted(map) {
            Some(shown) => crate::digest::canonical_object(&shown),
            None => crate::digest::canonical_object(map),
        },
        // Not an object (refused by the pipeline): a sensitive input shows nothing of it.
        _ if !ability.sensitive().is_empty() => crate::digest::canonical(&Value::Null),
        other => crate::digest::canonical(other),
    };
    crate::digest::hex(&digest)
}

/// Record a confirmation token issued or redeemed (`kind`) for `operation`, and how it went.
#[cfg_attr(
    not(feature = "aql"),
    allow(dead_code, reason = "used by the MCP-AQL surface")
)]
pub(crate) fn confirmation(
    audit: &Audit,
    kind: &str,
    ctx: &crate::Context,
    operation: &str,
    outcome: Result<(), &crate::AbilityError>,
) {
    if !audit.enabled() {
        return;
    }
    let code = match outcome {
        Ok(()) => "OK",
        Err(error) => error.code().as_str(),
    };
    let mut fields = Map::with_capacity(7);
    fields.insert("event".to_owned(), json!(kind));
    fields.insert("request_id".to_owned(), json!(ctx.request_id()));
    fields.insert("principal".to_owned(), json!(ctx.caller().principal()));
    fields.insert("surface".to_owned(), json!(ctx.via()));
    fields.insert("operation".to_owned(), json!(operation));
    fields.insert("outcome".to_owned(), json!(code));
    audit.record(fields);
}
