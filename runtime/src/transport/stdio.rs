//! Newline-delimited JSON-RPC over stdio or any byte stream, as an rmcp transport.
//!
//! Each line is parsed once, straight into the protocol's message type. A line that is not
//! JSON gets the JSON-RPC parse error (-32700, `id: null`); a JSON value that is not a message
//! gets an invalid-request error (-32600, with the message's id when it has one); an
//! unknown notification is ignored, as JSON-RPC wants. The server keeps serving either way.

use std::collections::VecDeque;
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{
    ClientNotification, ClientRequest, GetMeta as _, JsonRpcMessage, ProtocolVersion, RequestId,
    ServerResult,
};
use rmcp::service::{RxJsonRpcMessage, ServiceExt, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Mutex, mpsc};

use super::stdio_direct::{StdioDirect, write_line};
use super::{
    ErrorAnswer, MAX_ANSWERING, answer_id, batch, check_cursor, check_message, listened_tasks,
};
use crate::{Server, ServerError};

/// The longest line accepted; a longer one is answered with an error and skipped.
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

impl Server {
    /// Serve over stdin/stdout until stdin closes. Log to stderr only: stdout carries the
    /// protocol.
    pub async fn serve_stdio(&self) -> Result<(), ServerError> {
        self.serve_stream(tokio::io::stdin(), tokio::io::stdout())
            .await
    }

    /// Serve newline-delimited JSON-RPC read from `input` and written to `output`, as the local
    /// caller, until `input` closes.
    pub async fn serve_stream<R, W>(&self, input: R, output: W) -> Result<(), ServerError>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        self.serve_stream_with(self.local_handler(), input, output)
            .await
    }

    /// [`serve_stream`](Self::serve_stream) with `handler` (which says who calls).
    pub(crate) async fn serve_stream_with<R, W>(
        &self,
        handler: crate::adapter::McpHandler,
        input: R,
        output: W,
    ) -> Result<(), ServerError>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let writer = Arc::new(Mutex::new(output));
        let (rejections, mut pending) = mpsc::unbounded_channel::<Vec<u8>>();
        // Answers to bad lines are written by their own task: rmcp drops the `receive` future
        // whenever another branch of its `select!` is ready, and an answer written inside it
        // would be lost half-way. Queueing is synchronous, so nothing is lost; the task ends
        // once the transport (the sender) is gone and the queue is drained.
        let rejection_writer = Arc::clone(&writer);
        let rejecting = tokio::spawn(async move {
            while let Some(answer) = pending.recv().await {
                if write_line(&rejection_writer, answer).await.is_err() {
                    break;
                }
            }
        });
        // Plain requests are answered in place once the session has started (the handler is
        // the session's: one log level).
        let direct = StdioDirect::new(handler.clone());
        let transport = LineTransport {
            direct: Arc::clone(&direct),
            reader: BufReader::new(input),
            writer: Arc::clone(&writer),
            rejections: Some(rejections),
            line: Vec::new(),
            skipping: false,
            version: None,
            queued: VecDeque::new(),
            batches: Vec::new(),
            started: false,
            in_flight: std::collections::HashSet::new(),
        };
        let served = match handler.serve(transport).await {
            Ok(running) => {
                direct.started(running.peer().clone());
                // Answers being made in place when the input closes are waited for from then,
                // beside rmcp's own (5 s each), not after them.
                let serving = async {
                    let served = running.waiting().await;
                    direct.close();
                    served
                };
                tokio::join!(serving, direct.drain_once_closed())
                    .0
                    .map(drop)
                    .map_err(|e| ServerError::Session(e.to_string()))
            }
            // The stream closed before the client initialized: nothing to serve.
            Err(e) => {
                tracing::debug!(error = %e, "session ended before initialization");
                Ok(())
            }
        };
        // The transport (and with it the queue's sender) is gone: every answer to a bad line
        // is written before the output closes.
        let _ = rejecting.await;
        let _ = writer.lock().await.shutdown().await;
        served
    }
}

struct LineTransport<R, W> {
    /// Where plain requests are answered once the session has started.
    direct: Arc<StdioDirect>,
    reader: BufReader<R>,
    writer: Arc<Mutex<W>>,
    /// Answers to lines that are not messages, for the task that writes them (gone once the
    /// transport closes).
    rejections: Option<mpsc::UnboundedSender<Vec<u8>>>,
    line: Vec<u8>,
    /// Discarding the rest of an oversized line.
    skipping: bool,
    /// The protocol version the session negotiated (which decides whether batches are taken).
    version: Option<String>,
    /// The members of a batch not yet handed to the server.
    queued: VecDeque<RxJsonRpcMessage<RoleServer>>,
    /// Batches whose requests are not all answered yet.
    batches: Vec<Batch>,
    /// A request has been handed to the server: before one, rmcp ends the session on any
    /// other message, so notifications and responses are dropped here.
    started: bool,
    /// The ids of the requests handed to the server and not answered yet: answers are
    /// matched to requests by id, so a second request with one of them is refused.
    in_flight: std::collections::HashSet<String>,
}

/// A batch being answered: the ids of its requests still running, and the answers so far.
#[derive(Default)]
struct Batch {
    waiting: Vec<String>,
    answers: Vec<Value>,
}

/// The refusal of a request past [`MAX_ANSWERING`].
fn too_many() -> String {
    format!(
        "Too many requests: {MAX_ANSWERING} requests are being answered, the most a session \
         may have; send this one again once some are answered"
    )
}

fn id_key(id: &RequestId) -> String {
    serde_json::to_string(id).unwrap_or_default()
}

impl<R, W> LineTransport<R, W> {
    /// `message`, unless it is a notification or a response while rmcp still waits for the
    /// session's first request (`initialize`, or a complete 2026-07-28 request other than
    /// `ping` and `server/discover`): rmcp would end the session on it, so one stray
    /// notification would close the server. The test mirrors rmcp's own.
    fn starting(
        &mut self,
        message: RxJsonRpcMessage<RoleServer>,
    ) -> Option<RxJsonRpcMessage<RoleServer>> {
        if self.started {
            self.forget_cancelled(&message);
            return Some(message);
        }
        let JsonRpcMessage::Request(request) = &message else {
            tracing::debug!("dropping a message that came before the session's first request");
            return None;
        };
        self.started = match &request.request {
            ClientRequest::InitializeRequest(_) => true,
            ClientRequest::PingRequest(_) | ClientRequest::DiscoverRequest(_) => false,
            other => {
                let meta = other.get_meta();
                meta.missing_required_keys(&ProtocolVersion::V_2026_07_28)
                    .is_empty()
                    && meta
                        .protocol_version()
                        .is_some_and(|v| ProtocolVersion::KNOWN_VERSIONS.contains(&v))
            }
        };
        Some(message)
    }

    /// A cancelled request of a batch gets no answer (rmcp drops it): the batch stops waiting
    /// for it, and is answered if nothing else is left.
    fn forget_cancelled(&mut self, message: &RxJsonRpcMessage<RoleServer>) {
        let JsonRpcMessage::Notification(notification) = message else {
            return;
        };
        let ClientNotification::CancelledNotification(cancelled) = &notification.notification
        else {
            return;
        };
        let Some(id) = cancelled.params.request_id.as_ref() else {
            return;
        };
        let key = id_key(id);
        // rmcp answers a cancelled request with nothing: its id is free again.
        self.in_flight.remove(&key);
        self.direct.cancel(&key);
        let Some(at) = self.batches.iter().position(|b| b.waiting.contains(&key)) else {
            return;
        };
        self.batches[at].waiting.retain(|waiting| *waiting != key);
        if !self.batches[at].waiting.is_empty() {
            return;
        }
        let done = self.batches.swap_remove(at);
        if let (Some(line), Some(queue)) = (batch::answer(done.answers), &self.rejections) {
            let _ = queue.send(line);
        }
    }

    /// Take a batch line: queue its members for the server, answer at once those that are
    /// not messages (and the whole batch, when no member is a request or batches are not
    /// allowed); the rest is answered together once the server has answered every request.
    fn take_batch(&mut self, text: &[u8]) -> Option<Vec<u8>> {
        if let Some(refusal) = batch::refusal(self.version.as_deref()) {
            return Some(refusal.line());
        }
        let members = match batch::members(text) {
            Ok(members) => members,
            Err(answer) => return Some(answer.line()),
        };
        let mut pending = Batch::default();
        let mut answer = |refusal: ErrorAnswer| pending.answers.push(refusal.into_value());
        let mut queued = Vec::new();
        let mut waiting = Vec::new();
        for member in members {
            if let Err(refusal) = check_message(&member) {
                answer(refusal);
                continue;
            }
            if let Some(refused) = batch::forbidden_member(&member) {
                answer(refused);
                continue;
            }
            let bytes = member.to_string().into_bytes();
            if let Err(refusal) = check_cursor(&bytes) {
                answer(refusal);
                continue;
            }
            match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(&bytes) {
                Ok(message) => {
                    if let JsonRpcMessage::Request(request) = &message {
                        let key = id_key(&request.id);
                        let taken = waiting.contains(&key)
                            || self.in_flight.contains(&key)
                            || self.direct.holds(&key);
                        if taken {
                            answer(ErrorAnswer::invalid(answer_id(&member), batch::REPEATED_ID));
                            continue;
                        }
                        if self.answering() + waiting.len() >= MAX_ANSWERING {
                            answer(ErrorAnswer::new(answer_id(&member), -32000, too_many()));
                            continue;
                        }
                        waiting.push(key);
                    }
                    queued.push(message);
                }
                Err(e) => {
                    if let Some(refusal) = reject(&bytes, &e) {
                        answer(refusal);
                    }
                }
            }
        }
        self.queued.extend(queued);
        self.in_flight.extend(waiting.iter().cloned());
        pending.waiting = waiting;
        if pending.waiting.is_empty() {
            return batch::answer(pending.answers);
        }
        self.batches.push(pending);
        None
    }

    /// What one whole line (trimmed) comes to: a message for the server, an answer to write
    /// at once, or neither. The line is read again only for what rmcp's types drop: a list
    /// request's cursor that is no string, a listen request's task ids.
    fn take_line(&mut self, text: &[u8]) -> Line
    where
        W: AsyncWrite + Unpin + Send + 'static,
    {
        if text.is_empty() {
            return Line::Nothing;
        }
        if batch::is_batch(text) {
            return self.take_batch(text).map_or(Line::Nothing, Line::Answer);
        }
        // A task request of a 2025-11-25 session, renamed for the adapter's room for them.
        let renamed = (self.version.as_deref() == Some("2025-11-25") && self.direct.offers_tasks())
            .then(|| super::tasks_2025_request(text))
            .flatten();
        let text = renamed.as_deref().unwrap_or(text);
        let mut message = match super::parse::client_message(text) {
            Ok(message) => message,
            Err(e) => return reject(text, &e).map_or(Line::Nothing, Line::refused),
        };
        if let Err(refusal) = list_cursor(&message, text) {
            return Line::refused(refusal);
        }
        if let JsonRpcMessage::Request(request) = &mut message
            && let ClientRequest::SubscriptionsListenRequest(listen) = &mut request.request
            && let Some(tasks) = listened_tasks(text)
        {
            listen.extensions.insert(tasks);
        }
        if let Some(refusal) = removed_ping(&message).or_else(|| self.repeated(&message)) {
            return Line::refused(refusal);
        }
        match self
            .starting(message)
            .and_then(|message| self.in_place(message))
        {
            Some(message) => Line::Serve(message),
            None => Line::Nothing,
        }
    }

    /// How many requests of the session are being answered: by the server, or in place.
    fn answering(&self) -> usize {
        self.in_flight.len() + self.direct.len()
    }

    /// The refusal of a request whose id a request still being answered has; otherwise its
    /// id is taken until its answer goes out.
    fn repeated(&mut self, message: &RxJsonRpcMessage<RoleServer>) -> Option<ErrorAnswer> {
        let JsonRpcMessage::Request(request) = message else {
            return None;
        };
        let key = id_key(&request.id);
        let id = serde_json::to_value(&request.id).unwrap_or(Value::Null);
        if self.answering() >= MAX_ANSWERING && !self.in_flight.contains(&key) {
            return Some(ErrorAnswer::new(id, -32000, too_many()));
        }
        if !self.direct.holds(&key) && self.in_flight.insert(key) {
            return None;
        }
        Some(ErrorAnswer::invalid(
            id,
            "Invalid Request: a request with this id is still being answered",
        ))
    }

    /// `message`, unless it is a request answered in place (whose id is then held there
    /// instead, until its answer is written).
    fn in_place(
        &mut self,
        message: RxJsonRpcMessage<RoleServer>,
    ) -> Option<RxJsonRpcMessage<RoleServer>>
    where
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let JsonRpcMessage::Request(request) = &message else {
            return Some(message);
        };
        let key = id_key(&request.id);
        match self.direct.take(message, key.clone(), &self.writer) {
            Some(message) => Some(message),
            None => {
                self.in_flight.remove(&key);
                None
            }
        }
    }

    /// Keep `item` for its batch if it answers a batch's request: the batch's whole answer
    /// once it is complete, `Err(())` while it is not, `Ok(None)` for a message of no batch.
    #[allow(clippy::result_unit_err, reason = "a private three-way answer")]
    fn batched(&mut self, item: &TxJsonRpcMessage<RoleServer>) -> Result<Option<Vec<u8>>, ()> {
        let id = match item {
            JsonRpcMessage::Response(response) => Some(&response.id),
            JsonRpcMessage::Error(error) => error.id.as_ref(),
            _ => None,
        };
        let Some(key) = id.map(id_key) else {
            return Ok(None);
        };
        self.in_flight.remove(&key);
        let Some(at) = self.batches.iter().position(|b| b.waiting.contains(&key)) else {
            return Ok(None);
        };
        let pending = &mut self.batches[at];
        pending.waiting.retain(|waiting| *waiting != key);
        match serde_json::to_value(item) {
            Ok(value) => pending.answers.push(value),
            Err(e) => tracing::error!(error = %e, "an answer in a batch did not serialize"),
        }
        if !pending.waiting.is_empty() {
            return Err(());
        }
        let done = self.batches.swap_remove(at);
        Ok(batch::answer(done.answers))
    }
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let mut item = item;
        if let JsonRpcMessage::Response(response) = &mut item
            && let ServerResult::InitializeResult(init) = &response.result
        {
            self.version = Some(init.protocol_version.to_string());
            if self.direct.offers_tasks()
                && let Some(announced) = crate::adapter::tasks_2025::announced(init)
            {
                response.result = announced;
            }
        }
        let batched = self.batched(&item);
        let writer = Arc::clone(&self.writer);
        async move {
            let line = match batched {
                Ok(None) => serde_json::to_vec(&item).map_err(std::io::Error::other)?,
                Ok(Some(line)) => line,
                Err(()) => return Ok(()),
            };
            write_line(&writer, line).await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if let Some(message) = self.queued.pop_front() {
                if let Some(message) = self.starting(message) {
                    return Some(message);
                }
                continue;
            }
            // rmcp polls `receive` inside a `select!`, so this future may be dropped mid-read:
            // `self.line` keeps the partial bytes and is emptied only once a line is whole.
            let room = (MAX_LINE_BYTES + 1).saturating_sub(self.line.len()) as u64;
            let read = AsyncReadExt::take(&mut self.reader, room)
                .read_until(b'\n', &mut self.line)
                .await;
            let at_eof = match read {
                Ok(0) if self.line.is_empty() => {
                    self.direct.close();
                    return None;
                }
                Ok(0) => true,
                Ok(_) => false,
                Err(e) => {
                    tracing::error!(error = %e, "reading the input failed");
                    self.direct.close();
                    return None;
                }
            };
            let whole = self.line.ends_with(b"\n") || at_eof;
            if self.skipping {
                // The tail of an oversized line, already answered.
                self.skipping = !whole;
                self.line.clear();
                continue;
            }
            let answer = if !whole {
                if self.line.len() <= MAX_LINE_BYTES {
                    continue;
                }
                self.skipping = true;
                self.line.clear();
                Some(
                    ErrorAnswer::invalid(
                        Value::Null,
                        format!("Invalid Request: message exceeds {MAX_LINE_BYTES} bytes"),
                    )
                    .line(),
                )
            } else {
                let line = std::mem::take(&mut self.line);
                match self.take_line(trim_line(&line)) {
                    Line::Serve(message) => return Some(message),
                    Line::Answer(answer) => Some(answer),
                    Line::Nothing => continue,
                }
            };
            if let Some(answer) = answer
                && self
                    .rejections
                    .as_ref()
                    .is_none_or(|queue| queue.send(answer).is_err())
            {
                return None;
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // The output is shut once the answers still queued are written (`serve_stream`).
        self.rejections = None;
        self.writer.lock().await.flush().await
    }
}

/// The answer to a `ping` of protocol 2026-07-28, which removed it: "method not found",
/// in the adapter's words, whether or not the session has started (rmcp would answer a
/// ping before the first request, and refuse it after).
fn removed_ping(message: &RxJsonRpcMessage<RoleServer>) -> Option<ErrorAnswer> {
    let JsonRpcMessage::Request(request) = message else {
        return None;
    };
    let ClientRequest::PingRequest(_) = &request.request else {
        return None;
    };
    let version = request.request.get_meta().protocol_version()?;
    if version.as_str() < ProtocolVersion::V_2026_07_28.as_str() {
        return None;
    }
    let error = crate::adapter::removed("ping");
    let id = serde_json::to_value(&request.id).unwrap_or(Value::Null);
    Some(ErrorAnswer::new(id, error.code.0, error.message))
}

/// What a whole line of input comes to.
#[allow(
    clippy::large_enum_variant,
    reason = "made and matched once per line, never stored"
)]
enum Line {
    /// A message for the server.
    Serve(RxJsonRpcMessage<RoleServer>),
    /// An answer to write at once (a refusal, or a batch's whole answer).
    Answer(Vec<u8>),
    /// Nothing to serve or answer (a blank line, a notification, a batch still waiting).
    Nothing,
}

impl Line {
    fn refused(refusal: ErrorAnswer) -> Self {
        Self::Answer(refusal.line())
    }
}

fn trim_line(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    line.trim_ascii()
}

/// The answer to a line that is not a message the server understands, if it deserves one.
fn reject(text: &[u8], error: &serde_json::Error) -> Option<ErrorAnswer> {
    let value = match serde_json::from_slice::<Value>(text) {
        Ok(value) => value,
        Err(e) => {
            return Some(ErrorAnswer::new(
                Value::Null,
                -32700,
                format!("Parse error: {e}"),
            ));
        }
    };
    if let Err(refusal) = check_message(&value) {
        return Some(refusal);
    }
    if value.get("method").is_none() {
        // A response to no request of ours (or one we cannot read): answering a response
        // would start a loop between the peers, so it is dropped.
        tracing::debug!(%error, "dropping a response the server cannot match");
        return None;
    }
    if value.get("id").is_none() {
        // A notification the server does not know: JSON-RPC sends nothing back.
        tracing::debug!(%error, "ignoring an unknown notification");
        return None;
    }
    Some(ErrorAnswer::invalid(
        answer_id(&value),
        format!("Invalid Request: {error}"),
    ))
}

/// A list request's cursor that is no string ([`check_cursor`]), read from `text` only when
/// the message rmcp typed is a list request (or one rmcp could not type).
fn list_cursor(message: &RxJsonRpcMessage<RoleServer>, text: &[u8]) -> Result<(), ErrorAnswer> {
    match message {
        JsonRpcMessage::Request(request)
            if super::PAGINATED.contains(&request.request.method())
                || matches!(request.request, ClientRequest::CustomRequest(_)) =>
        {
            check_cursor(text)
        }
        _ => Ok(()),
    }
}
