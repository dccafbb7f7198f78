//! A request's body read within its size and time limits. A body over the size limit is read
//! on and thrown away (within bounds of its own) before the refusal is sent: a client that
//! writes its whole body before it reads (no `Expect: 100-continue`, as Python's `http.client`,
//! Node's `fetch` and reqwest do) would otherwise meet a closed connection, never the `413`.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, header};
use http_body_util::BodyExt;

/// The most of an over-limit body read and thrown away before its refusal is sent.
pub(crate) const DRAIN_BYTES: u64 = 64 << 20;
/// The longest an over-limit body is read for before its refusal is sent anyway (and never
/// longer than the body read timeout).
pub(crate) const DRAIN_TIME: Duration = Duration::from_secs(10);

/// Why a body was not read.
#[derive(Debug)]
pub(crate) enum BodyError {
    /// It is longer than the limit (declared or read).
    TooLarge,
    /// It failed to arrive (the connection broke).
    Failed(axum::Error),
    /// It did not arrive within the time limit.
    Slow,
}

/// Whether the client waits for `100 Continue` before it sends the body: then it reads a
/// refusal sent in its stead, and nothing needs draining.
fn expects_continue(headers: &HeaderMap) -> bool {
    headers
        .get(header::EXPECT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"))
}

/// The body of a request with `headers`, at most `limit` bytes, within `timeout`.
pub(crate) async fn read(
    headers: &HeaderMap,
    mut body: Body,
    limit: usize,
    timeout: Duration,
) -> Result<Bytes, BodyError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let drains = !expects_continue(headers);
    if let Some(length) = declared.filter(|length| *length > limit as u64) {
        if drains && length <= DRAIN_BYTES {
            drain(&mut body, 0, timeout).await;
        }
        return Err(BodyError::TooLarge);
    }
    let mut bytes = Vec::with_capacity(declared.map_or(0, |n| n as usize).min(limit));
    let read = async {
        while let Some(frame) = body.frame().await {
            let Ok(data) = frame.map_err(BodyError::Failed)?.into_data() else {
                continue;
            };
            if bytes.len() + data.len() > limit {
                return Err(BodyError::TooLarge);
            }
            bytes.extend_from_slice(&data);
        }
        Ok(())
    };
    match tokio::time::timeout(timeout, read).await {
        Ok(Ok(())) => Ok(Bytes::from(bytes)),
        Ok(Err(BodyError::TooLarge)) => {
            if drains {
                drain(&mut body, bytes.len() as u64, timeout).await;
            }
            Err(BodyError::TooLarge)
        }
        Ok(Err(other)) => Err(other),
        Err(_) => Err(BodyError::Slow),
    }
}

/// Read the rest of `body` and throw it away, `seen` bytes of it already read, up to
/// [`DRAIN_BYTES`] in all and for [`DRAIN_TIME`] or `timeout`, whichever is shorter.
async fn drain(body: &mut Body, mut seen: u64, timeout: Duration) {
    let rest = async {
        while seen <= DRAIN_BYTES {
            match body.frame().await {
                Some(Ok(frame)) => {
                    seen += frame.data_ref().map_or(0, |d| d.len() as u64);
                }
                _ => return,
            }
        }
    };
    let _ = tokio::time::timeout(DRAIN_TIME.min(timeout), rest).await;
}
