//! Newline-delimited JSON-RPC over stdio or any byte stream, as an rmcp transport.
//!
//! Each line is parsed once, straight into the protocol's message type. A line that is not
//! JSON gets the JSON-RPC parse error (-32700, `id: null`); a JSON value that is not a message
//! gets an invalid-request error (-32600, with the message's id when it has one); an
//! unknown notification is ignored, as JSON-RPC wants. The server keeps serving either way.

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{ClientRequest, JsonRpcMessage};
use rmcp::service::{RxJsonRpcMessage, ServiceExt, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Mutex, mpsc};

use super::{answer_id, check_cursor, check_message, error_line, listened_tasks};
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
        let transport = LineTransport {
            reader: BufReader::new(input),
            writer: Arc::clone(&writer),
            rejections: Some(rejections),
            line: Vec::new(),
            skipping: false,
        };
        let served = match self.local_handler().serve(transport).await {
            Ok(running) => running
                .waiting()
                .await
                .map(drop)
                .map_err(|e| ServerError::Session(e.to_string())),
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
    reader: BufReader<R>,
    writer: Arc<Mutex<W>>,
    /// Answers to lines that are not messages, for the task that writes them (gone once the
    /// transport closes).
    rejections: Option<mpsc::UnboundedSender<Vec<u8>>>,
    line: Vec<u8>,
    /// Discarding the rest of an oversized line.
    skipping: bool,
}

async fn write_line<W: AsyncWrite + Unpin>(
    writer: &Mutex<W>,
    mut line: Vec<u8>,
) -> std::io::Result<()> {
    line.push(b'\n');
    let mut writer = writer.lock().await;
    writer.write_all(&line).await?;
    writer.flush().await
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
        let writer = Arc::clone(&self.writer);
        async move {
            let line = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            write_line(&writer, line).await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            // rmcp polls `receive` inside a `select!`, so this future may be dropped mid-read:
            // `self.line` keeps the partial bytes and is emptied only once a line is whole.
            let room = (MAX_LINE_BYTES + 1).saturating_sub(self.line.len()) as u64;
            let read = AsyncReadExt::take(&mut self.reader, room)
                .read_until(b'\n', &mut self.line)
                .await;
            let at_eof = match read {
                Ok(0) if self.line.is_empty() => return None,
                Ok(0) => true,
                Ok(_) => false,
                Err(e) => {
                    tracing::error!(error = %e, "reading the input failed");
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
                Some(error_line(
                    &Value::Null,
                    -32600,
                    format!("Invalid Request: message exceeds {MAX_LINE_BYTES} bytes"),
                ))
            } else {
                let line = std::mem::take(&mut self.line);
                let text = trim_line(&line);
                if text.is_empty() {
                    continue;
                }
                match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(text) {
                    Ok(mut message) => match check_cursor(text) {
                        Ok(()) => {
                            if let (Some(tasks), JsonRpcMessage::Request(request)) =
                                (listened_tasks(text), &mut message)
                                && let ClientRequest::SubscriptionsListenRequest(listen) =
                                    &mut request.request
                            {
                                listen.extensions.insert(tasks);
                            }
                            return Some(message);
                        }
                        Err((id, why)) => Some(error_line(&id, -32602, why)),
                    },
                    Err(e) => reject(text, &e),
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

fn trim_line(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    line.trim_ascii()
}

/// The answer to a line that is not a message the server understands, if it deserves one.
fn reject(text: &[u8], error: &serde_json::Error) -> Option<Vec<u8>> {
    let value = match serde_json::from_slice::<Value>(text) {
        Ok(value) => value,
        Err(e) => {
            return Some(error_line(
                &Value::Null,
                -32700,
                format!("Parse error: {e}"),
            ));
        }
    };
    if let Err((id, why)) = check_message(&value) {
        return Some(error_line(&id, -32600, why));
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
    Some(error_line(
        &answer_id(&value),
        -32600,
        format!("Invalid Request: {error}"),
    ))
}
