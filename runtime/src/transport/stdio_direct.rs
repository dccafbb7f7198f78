//! A plain request on stdio answered in place. Once the session has started, a `tools/call`
//! or a list request goes from the line transport straight to the adapter, in a task of its
//! own, and its answer is written to the output by that task: not through rmcp's service
//! loop and its channels. Everything else (`initialize`, responses to the server's own
//! requests, notifications, batches, every other method) still goes to rmcp.
//!
//! What rmcp's loop does for a request, this does too: the request's token is cancelled by
//! `notifications/cancelled` (and the answer then dropped, its id free again) and once the
//! answer is made; when the input closes, answers still being made are written for up to
//! 5 s, then the rest are cancelled. Progress and log messages a handler sends go through the
//! session's peer and are written before the handler goes on, so they reach the client before
//! the answer. (A handler that panics gets an internal error as its answer, where rmcp's loop
//! would give none.)
//!
//! Only sessions opened with `initialize` are served here: in one opened inline (a complete
//! 2026-07-28 request first), whether the server may send requests to the client depends on
//! each request's version, which rmcp's loop tracks around its handlers.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures_util::FutureExt as _;
use rmcp::model::{ClientRequest, JsonRpcMessage, JsonRpcRequest};
use rmcp::service::{Peer, RxJsonRpcMessage};
use rmcp::{RoleServer, Service as _};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{Mutex, Notify};
use tokio_util::sync::CancellationToken;

use super::in_place::InPlace;
use crate::adapter::McpHandler;

/// How long answers still being made are waited for once the input closes, as rmcp waits.
const DRAIN: Duration = Duration::from_secs(5);

/// The in-place path of one stdio session.
pub(super) struct StdioDirect {
    handler: McpHandler,
    /// The session's peer, once rmcp has started the session.
    peer: OnceLock<Peer<RoleServer>>,
    /// The requests being answered in place, by id (as `id_key` writes it): each one's
    /// ticket (an id may be used again once free, so a late task must not take the next
    /// request's entry) and token.
    running: std::sync::Mutex<HashMap<String, (u64, CancellationToken)>>,
    /// The next ticket.
    tickets: AtomicU64,
    /// How many answering tasks have not ended, and a wake-up when one ends.
    pending: AtomicUsize,
    ended: Notify,
    /// The input has closed (or the session ended), and a wake-up when it does.
    closed: AtomicBool,
    closing: Notify,
}

impl StdioDirect {
    pub(super) fn new(handler: McpHandler) -> Arc<Self> {
        Arc::new(Self {
            handler,
            peer: OnceLock::new(),
            running: std::sync::Mutex::new(HashMap::new()),
            tickets: AtomicU64::new(0),
            pending: AtomicUsize::new(0),
            ended: Notify::new(),
            closed: AtomicBool::new(false),
            closing: Notify::new(),
        })
    }

    /// Whether the endpoint's tools may run as tasks (a 2025-11-25 session's are answered
    /// by the adapter's room for that version's tasks).
    pub(super) fn offers_tasks(&self) -> bool {
        self.handler.offers_tasks()
    }

    /// The session has started: requests may be answered in place from now on.
    pub(super) fn started(&self, peer: Peer<RoleServer>) {
        let _ = self.peer.set(peer);
    }

    /// Whether a request with this id is being answered in place.
    /// How many requests are being answered in place.
    pub(super) fn len(&self) -> usize {
        self.running().len()
    }

    pub(super) fn holds(&self, key: &str) -> bool {
        self.running().contains_key(key)
    }

    /// `notifications/cancelled` for `key`: its token fires, its answer will not be written,
    /// and its id is free again. Whether the request was one answered here.
    pub(super) fn cancel(&self, key: &str) -> bool {
        match self.running().remove(key) {
            Some((_, ct)) => {
                ct.cancel();
                true
            }
            None => false,
        }
    }

    fn running(&self) -> std::sync::MutexGuard<'_, HashMap<String, (u64, CancellationToken)>> {
        // A panic while the map was held leaves it whole (every change is one call).
        self.running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Take `message` to answer in place (its id under `key`), writing the answer to
    /// `writer`; or hand it back for rmcp.
    pub(super) fn take<W>(
        self: &Arc<Self>,
        message: RxJsonRpcMessage<RoleServer>,
        key: String,
        writer: &Arc<Mutex<W>>,
    ) -> Option<RxJsonRpcMessage<RoleServer>>
    where
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let Some(peer) = self.peer.get().filter(|peer| peer.peer_info().is_some()) else {
            return Some(message);
        };
        let request = match message {
            JsonRpcMessage::Request(request) if InPlace::of(&request.request).is_some() => request,
            other => return Some(other),
        };
        let ct = CancellationToken::new();
        let ticket = self.tickets.fetch_add(1, Ordering::Relaxed);
        self.running().insert(key.clone(), (ticket, ct.clone()));
        self.pending.fetch_add(1, Ordering::AcqRel);
        let this = Arc::clone(self);
        let peer = peer.clone();
        let writer = Arc::clone(writer);
        tokio::spawn(async move {
            let _ended = Ended(&this);
            this.answer(request, (key, ticket), ct, peer, &writer).await;
        });
        None
    }

    async fn answer<W>(
        &self,
        request: JsonRpcRequest<ClientRequest>,
        (key, ticket): (String, u64),
        ct: CancellationToken,
        peer: Peer<RoleServer>,
        writer: &Mutex<W>,
    ) where
        W: AsyncWrite + Unpin,
    {
        let JsonRpcRequest {
            id, mut request, ..
        } = request;
        let context = super::request_context(&mut request, id.clone(), peer, ct.clone());
        let handled = AssertUnwindSafe(self.handler.handle_request(request, context))
            .catch_unwind()
            .await;
        ct.cancel();
        // Cancelled meanwhile (the entry gone, or another request's since): rmcp answers a
        // cancelled request with nothing.
        {
            let mut running = self.running();
            if running.get(&key).is_none_or(|(held, _)| *held != ticket) {
                return;
            }
            running.remove(&key);
        }
        let message = super::answer_message(id, handled);
        match serde_json::to_vec(&message) {
            Ok(line) => {
                if let Err(error) = write_line(writer, line).await {
                    tracing::debug!(%error, "an answer was not written");
                }
            }
            Err(error) => tracing::error!(%error, "an answer did not serialize"),
        }
    }

    /// The input has closed, or the session has ended.
    pub(super) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.closing.notify_waiters();
    }

    /// Once [closed](Self::close): wait up to 5 s for the answers still being made, then
    /// cancel the rest and wait for them to end.
    pub(super) async fn drain_once_closed(&self) {
        loop {
            let closing = self.closing.notified();
            if self.closed.load(Ordering::Acquire) {
                break;
            }
            closing.await;
        }
        self.drain().await;
    }

    async fn drain(&self) {
        if tokio::time::timeout(DRAIN, self.idle()).await.is_err() {
            tracing::warn!("answers still being made 5 s after the input closed are cancelled");
            for (_, (_, ct)) in self.running().drain() {
                ct.cancel();
            }
            let _ = tokio::time::timeout(DRAIN, self.idle()).await;
        }
    }

    async fn idle(&self) {
        loop {
            let ended = self.ended.notified();
            if self.pending.load(Ordering::Acquire) == 0 {
                return;
            }
            ended.await;
        }
    }
}

/// Counts an answering task as ended when it is dropped, however it ends.
struct Ended<'a>(&'a StdioDirect);

impl Drop for Ended<'_> {
    fn drop(&mut self) {
        self.0.pending.fetch_sub(1, Ordering::AcqRel);
        self.0.ended.notify_waiters();
    }
}

/// Write `line` and a newline, and flush: one message of the output.
pub(super) async fn write_line<W: AsyncWrite + Unpin>(
    writer: &Mutex<W>,
    mut line: Vec<u8>,
) -> std::io::Result<()> {
    line.push(b'\n');
    let mut writer = writer.lock().await;
    writer.write_all(&line).await?;
    writer.flush().await
}
