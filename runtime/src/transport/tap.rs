//! The test client's wire tap: the lines between the in-process client and the server pass
//! through it unchanged, and it keeps the answers as the server wrote them, by request id.
//! The client reads protocol 2025-11-25's task answers from here, as rmcp's types, which
//! are the 2026-07-28 ones, would not hold them as written.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};

/// How many answers are kept, the oldest forgotten first.
const KEPT: usize = 256;

/// The answers the server wrote, by the id of the request they answer.
#[derive(Clone, Default)]
pub(super) struct Tap(Arc<Mutex<Answers>>);

#[derive(Default)]
struct Answers {
    by_id: HashMap<String, Value>,
    order: VecDeque<String>,
}

impl Tap {
    /// The client's end of a pipe to `server` (the server's end of another pipe): what
    /// passes from the server to the client is kept as it goes.
    pub(super) fn between(&self, server: DuplexStream) -> DuplexStream {
        let (client, tapped) = tokio::io::duplex(1 << 16);
        let (from_client, to_client) = tokio::io::split(tapped);
        let (from_server, to_server) = tokio::io::split(server);
        tokio::spawn(copy(from_client, to_server, None));
        tokio::spawn(copy(from_server, to_client, Some(self.clone())));
        client
    }

    /// The answer to the request `id`, as written (taken once).
    pub(super) fn take(&self, id: &str) -> Option<Value> {
        let mut answers = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        answers.by_id.remove(id)
    }

    fn keep(&self, line: &[u8]) {
        let Ok(message) = serde_json::from_slice::<Value>(line) else {
            return;
        };
        if message.get("method").is_some() {
            return;
        }
        let Some(id) = message.get("id").filter(|id| !id.is_null()) else {
            return;
        };
        let id = match id {
            Value::String(id) => id.clone(),
            id => id.to_string(),
        };
        let mut answers = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if answers.order.len() >= KEPT
            && let Some(oldest) = answers.order.pop_front()
        {
            answers.by_id.remove(&oldest);
        }
        answers.order.push_back(id.clone());
        answers.by_id.insert(id, message);
    }
}

/// Copy lines from `from` to `to` until either closes, keeping answers in `tap`.
async fn copy(from: impl AsyncRead + Unpin, mut to: impl AsyncWrite + Unpin, tap: Option<Tap>) {
    let mut from = BufReader::new(from);
    let mut line = Vec::new();
    loop {
        line.clear();
        match from.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if let Some(tap) = &tap {
            tap.keep(&line);
        }
        if to.write_all(&line).await.is_err() || to.flush().await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}
