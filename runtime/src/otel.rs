//! Traces for OpenTelemetry (feature `otel`): one span per request, joined to the client's
//! trace (W3C `traceparent` and `tracestate` in the request's `_meta`, else the HTTP
//! `traceparent` header); one per ability call; child spans for the store, a task's run and
//! whatever the application wraps with [`in_span`] (the bridge's upstream calls). Exported
//! over OTLP (HTTP/protobuf) or to a provider of the application's.
//!
//! What a span records is named below; the caller's principal only with
//! [`OtelConfig::record_principal`], arguments only with [`OtelConfig::record_arguments`] and
//! never a parameter marked `sensitive`.

use std::borrow::Cow;
use std::future::Future;

use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::{
    FutureExt as _, SpanKind, Status, TraceContextExt as _, Tracer as _, TracerProvider as _,
};
use opentelemetry::{Context as TraceContext, KeyValue};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use serde_json::{Map, Value};

/// The OpenTelemetry API crate at the version the server uses (`Context`, `KeyValue`, ...).
pub use opentelemetry;
/// The OpenTelemetry SDK at the version the server uses, for
/// [`OtelConfig::provider`]'s `SdkTracerProvider`.
pub use opentelemetry_sdk;

/// The `_meta` keys (and HTTP header) of the W3C trace context (SEP-414).
const TRACEPARENT: &str = "traceparent";
const TRACESTATE: &str = "tracestate";

/// How a server traces ([`ServerBuilder::otel`](crate::ServerBuilder::otel)).
///
/// ```
/// use abilities::otel::OtelConfig;
///
/// // OTLP over HTTP/protobuf, to where OTEL_EXPORTER_OTLP_* say (default
/// // http://localhost:4318/v1/traces); the caller's principal on each call's span.
/// let config = OtelConfig::otlp().record_principal(true);
/// # let _ = config;
/// ```
pub struct OtelConfig {
    exporter: Exporter,
    principal: bool,
    arguments: bool,
}

enum Exporter {
    Otlp,
    Provider(SdkTracerProvider),
}

impl std::fmt::Debug for OtelConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtelConfig")
            .field(
                "exporter",
                &match self.exporter {
                    Exporter::Otlp => "otlp",
                    Exporter::Provider(_) => "provider",
                },
            )
            .field("principal", &self.principal)
            .field("arguments", &self.arguments)
            .finish()
    }
}

impl OtelConfig {
    /// Export over OTLP, HTTP/protobuf, where the standard variables say:
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, else `OTEL_EXPORTER_OTLP_ENDPOINT` and
    /// `/v1/traces`, else `http://localhost:4318/v1/traces`; `OTEL_EXPORTER_OTLP_HEADERS` and
    /// `_TIMEOUT` too. Spans are sent in batches (`OTEL_BSP_SCHEDULE_DELAY`, default 5 s)
    /// from a thread of their own. The service is `OTEL_SERVICE_NAME`, else the server's
    /// name.
    pub fn otlp() -> Self {
        Self {
            exporter: Exporter::Otlp,
            principal: false,
            arguments: false,
        }
    }

    /// Send spans to `provider`: the application's own pipeline, or an in-memory exporter
    /// in a test.
    pub fn provider(provider: SdkTracerProvider) -> Self {
        Self {
            exporter: Exporter::Provider(provider),
            principal: false,
            arguments: false,
        }
    }

    /// Record the caller's principal (`enduser.id`) on each ability call's span (default:
    /// not).
    pub fn record_principal(mut self, record: bool) -> Self {
        self.principal = record;
        self
    }

    /// Record each argument the ability declares on the call's span, as
    /// `abilities.argument.<name>` with its JSON text (at most 1,024 bytes of it, at most 32
    /// arguments), a `sensitive` one as `"(sensitive)"` (default: none).
    pub fn record_arguments(mut self, record: bool) -> Self {
        self.arguments = record;
        self
    }
}

/// A server's tracer and what it records.
pub(crate) struct Tracing {
    tracer: SdkTracer,
    provider: SdkTracerProvider,
    principal: bool,
    arguments: bool,
}

impl std::fmt::Debug for Tracing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracing").finish_non_exhaustive()
    }
}

impl Drop for Tracing {
    fn drop(&mut self) {
        // What is still batched goes out before the server does.
        let _ = self.provider.force_flush();
    }
}

/// The tracer a request's spans were made with, carried in its context for the spans made
/// below it (the store's, [`in_span`]'s).
#[derive(Clone)]
struct Tracer(SdkTracer);

impl Tracing {
    /// The tracing `config` asks for, for the service `service` (the server's name).
    pub(crate) fn new(config: OtelConfig, service: &str) -> Result<Self, String> {
        let provider = match config.exporter {
            Exporter::Provider(provider) => provider,
            Exporter::Otlp => {
                use opentelemetry_otlp::WithExportConfig as _;
                let exporter = opentelemetry_otlp::SpanExporter::builder()
                    .with_http()
                    .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                    .build()
                    .map_err(|e| e.to_string())?;
                let mut resource = opentelemetry_sdk::Resource::builder();
                if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
                    resource = resource.with_service_name(service.to_owned());
                }
                SdkTracerProvider::builder()
                    .with_batch_exporter(exporter)
                    .with_resource(resource.build())
                    .build()
            }
        };
        let scope = opentelemetry::InstrumentationScope::builder("abilities")
            .with_version(env!("CARGO_PKG_VERSION"))
            .build();
        Ok(Self {
            tracer: provider.tracer_with_scope(scope),
            provider,
            principal: config.principal,
            arguments: config.arguments,
        })
    }

    /// The span of a request: `method target` (`tools/call count_posts`) when `target` is
    /// a tool or prompt the server serves, else `method`; a server span whose parent is the
    /// client's trace context in `meta` (else in `headers`), if any. What the client wrote
    /// (the request id, the version) is cut to 128 bytes.
    pub(crate) fn request(
        &self,
        method: &'static str,
        target: Option<&str>,
        id: String,
        meta: &Map<String, Value>,
        headers: Option<&axum::http::HeaderMap>,
    ) -> TraceContext {
        let id = clipped(id);
        let propagator = TraceContextPropagator::new();
        let mut parent = propagator.extract(&Meta(meta));
        if !parent.span().span_context().is_valid()
            && let Some(headers) = headers
        {
            parent = propagator.extract(&Headers(headers));
        }
        let name = match target {
            Some(target) => Cow::Owned(format!("{method} {target}")),
            None => Cow::Borrowed(method),
        };
        let mut attributes = vec![
            KeyValue::new("mcp.method.name", method),
            KeyValue::new("jsonrpc.request.id", id),
        ];
        if let Some(target) = target {
            let key = if method == "tools/call" {
                "gen_ai.tool.name"
            } else {
                "gen_ai.prompt.name"
            };
            attributes.push(KeyValue::new(key, target.to_owned()));
        }
        if let Some(version) = meta
            .get("io.modelcontextprotocol/protocolVersion")
            .and_then(Value::as_str)
        {
            attributes.push(KeyValue::new(
                "mcp.protocol.version",
                clipped(version.to_owned()),
            ));
        }
        let span = self
            .tracer
            .span_builder(name)
            .with_kind(SpanKind::Server)
            .with_attributes(attributes)
            .start_with_context(&self.tracer, &parent);
        parent
            .with_span(span)
            .with_value(Tracer(self.tracer.clone()))
    }

    /// Whether calls' arguments are recorded (then [`CallSpan::args`] carries them).
    pub(crate) fn records_arguments(&self) -> bool {
        self.arguments
    }

    /// The span of a call of an ability, below the current context: `call <ability>`.
    pub(crate) fn call(&self, call: CallSpan<'_>) -> TraceContext {
        let parent = TraceContext::current();
        let mut attributes = vec![
            KeyValue::new("abilities.ability", call.ability.to_owned()),
            KeyValue::new("abilities.surface", call.surface),
            KeyValue::new("abilities.semantic", call.semantic),
        ];
        if let Some(tool) = call.tool {
            attributes.push(KeyValue::new("gen_ai.tool.name", tool.to_owned()));
        }
        if self.principal {
            attributes.push(KeyValue::new("enduser.id", call.principal.to_owned()));
        }
        if let (Some(args), Some(declared)) = (&call.args, call.declared) {
            let recorded = args.iter().filter(|(name, _)| declared.contains_key(*name));
            for (name, value) in recorded.take(MAX_ARGUMENTS) {
                attributes.push(KeyValue::new(
                    format!("abilities.argument.{name}"),
                    shortened(value.to_string()),
                ));
            }
        }
        let span = self
            .tracer
            .span_builder(format!("call {}", call.ability))
            .with_kind(SpanKind::Internal)
            .with_attributes(attributes)
            .start_with_context(&self.tracer, &parent);
        parent
            .with_span(span)
            .with_value(Tracer(self.tracer.clone()))
    }
}

/// How many arguments a call's span records, at most.
const MAX_ARGUMENTS: usize = 32;
/// How long a recorded argument's JSON text is, at most (in bytes; longer ones are cut at a
/// character boundary and end with `...`).
const MAX_ARGUMENT_LEN: usize = 1024;

/// How long a client's string in a request's span is, at most.
const MAX_CLIENT_TEXT: usize = 128;

fn clipped(text: String) -> String {
    cut(text, MAX_CLIENT_TEXT)
}

fn shortened(text: String) -> String {
    cut(text, MAX_ARGUMENT_LEN)
}

fn cut(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str("...");
    }
    text
}

/// What a call's span names.
pub(crate) struct CallSpan<'a> {
    pub(crate) ability: &'a str,
    pub(crate) tool: Option<&'a str>,
    pub(crate) surface: &'static str,
    pub(crate) semantic: &'static str,
    pub(crate) principal: &'a str,
    /// The arguments with every sensitive value already hidden, when they are recorded.
    pub(crate) args: Option<Cow<'a, Map<String, Value>>>,
    /// The parameters the ability declares: only those are recorded.
    pub(crate) declared: Option<&'a Map<String, Value>>,
}

/// End the span of `cx` as ended with `outcome`: `Ok`, or the error's type (an upper-snake
/// code, a JSON-RPC code, `tool_error`), which also marks the span as an error.
pub(crate) fn end(cx: &TraceContext, outcome: Result<(), &str>) {
    let span = cx.span();
    match outcome {
        Ok(()) => span.set_attribute(KeyValue::new("abilities.outcome", "OK")),
        Err(kind) => {
            span.set_attribute(KeyValue::new("abilities.outcome", kind.to_owned()));
            span.set_attribute(KeyValue::new("error.type", kind.to_owned()));
            span.set_status(Status::error(kind.to_owned()));
        }
    }
    span.end();
}

/// Run `work` in a child span `name` of the current span, when the current context is a
/// traced request's (otherwise `work` as it is): for the work a handler does beyond the
/// server (an upstream call, a query). `kind` is the span's kind; the span is marked an
/// error when `work` returns `Err`.
///
/// ```
/// use abilities::otel::{in_span, opentelemetry::trace::SpanKind};
///
/// # async fn fetch() -> Result<u32, std::io::Error> { Ok(1) }
/// # async fn handler() -> Result<u32, std::io::Error> {
/// // Inside a handler: the upstream call gets a span of its own below the call's.
/// let rows = in_span("db query", SpanKind::Client, fetch()).await?;
/// # Ok(rows) }
/// ```
pub async fn in_span<T, E: std::fmt::Display>(
    name: impl Into<Cow<'static, str>>,
    kind: SpanKind,
    work: impl Future<Output = Result<T, E>>,
) -> Result<T, E> {
    let current = TraceContext::current();
    let Some(Tracer(tracer)) = current.get::<Tracer>().cloned() else {
        return work.await;
    };
    let span = tracer
        .span_builder(name)
        .with_kind(kind)
        .start_with_context(&tracer, &current);
    let cx = current.with_span(span);
    let out = work.with_context(cx.clone()).await;
    match &out {
        Ok(_) => cx.span().end(),
        Err(error) => {
            cx.span().set_status(Status::error(error.to_string()));
            cx.span().end();
        }
    }
    out
}

/// The current span's trace context, as `traceparent` (and `tracestate`) in `meta`: what a
/// request to another MCP server carries so its work joins this trace. Nothing when no
/// traced request is current.
pub fn inject(meta: &mut Map<String, Value>) {
    let current = TraceContext::current();
    if current.get::<Tracer>().is_none() {
        return;
    }
    TraceContextPropagator::new().inject_context(&current, &mut MetaOut(meta));
}

/// The span of a store operation, `store <operation>`, below the current traced request's
/// span, if there is one.
pub(crate) fn store(operation: &'static str) -> Option<TraceContext> {
    let current = TraceContext::current();
    let Tracer(tracer) = current.get::<Tracer>()?;
    let span = tracer
        .span_builder(format!("store {operation}"))
        .with_kind(SpanKind::Internal)
        .with_attributes([KeyValue::new("abilities.store.operation", operation)])
        .start_with_context(tracer, &current);
    Some(current.with_span(span))
}

/// A task's run: `task <tool>`, below the current span, until its call settles.
pub(crate) fn task(tool: &str, id: &str) -> Option<TraceContext> {
    let current = TraceContext::current();
    let Tracer(tracer) = current.get::<Tracer>()?;
    let span = tracer
        .span_builder(format!("task {tool}"))
        .with_kind(SpanKind::Internal)
        .with_attributes([KeyValue::new("mcp.task.id", id.to_owned())])
        .start_with_context(tracer, &current);
    Some(current.with_span(span))
}

/// `fut` with `cx` as its current trace context, when there is one.
pub(crate) fn within<F: Future>(
    cx: Option<&TraceContext>,
    fut: F,
) -> futures_util::future::Either<F, opentelemetry::trace::WithContext<F>> {
    match cx {
        Some(cx) => futures_util::future::Either::Right(fut.with_context(cx.clone())),
        None => futures_util::future::Either::Left(fut),
    }
}

/// A request's `_meta`, read as a carrier of the trace context.
struct Meta<'a>(&'a Map<String, Value>);

impl Extractor for Meta<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(Value::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        [TRACEPARENT, TRACESTATE]
            .into_iter()
            .filter(|k| self.0.contains_key(*k))
            .collect()
    }
}

/// A request's `_meta`, written as a carrier of the trace context.
struct MetaOut<'a>(&'a mut Map<String, Value>);

impl Injector for MetaOut<'_> {
    fn set(&mut self, key: &str, value: String) {
        // An empty `tracestate` says nothing: it is left out.
        if !value.is_empty() {
            self.0.insert(key.to_owned(), Value::String(value));
        }
    }
}

/// HTTP headers, read as a carrier of the trace context.
struct Headers<'a>(&'a axum::http::HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(axum::http::HeaderName::as_str).collect()
    }
}
