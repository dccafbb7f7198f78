//! `subscriptions/listen` streams kept within bounds: each holds a connection (or a session's
//! share of one) open for as long as the client likes, so a server takes at most so many at
//! once, and one caller at most so many of those.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::ErrorData;
use serde_json::json;

use crate::Caller;

/// How many listen streams the server holds at once, unless the builder says otherwise.
pub(crate) const DEFAULT_PER_SERVER: usize = 1000;
/// How many listen streams one caller holds at once, unless the builder says otherwise.
pub(crate) const DEFAULT_PER_CALLER: usize = 16;

/// The open listen streams: in all, and by caller.
pub(crate) struct Streams {
    open: Arc<Mutex<Open>>,
    per_server: usize,
    per_caller: usize,
}

#[derive(Default)]
struct Open {
    all: usize,
    by_caller: HashMap<String, usize>,
}

/// One open stream: its place is given back when it ends.
pub(crate) struct Held {
    open: Arc<Mutex<Open>>,
    caller: Option<String>,
}

impl Streams {
    pub(crate) fn new(per_server: usize, per_caller: usize) -> Self {
        Self {
            open: Arc::default(),
            per_server,
            per_caller,
        }
    }

    /// How many streams are open, and the server's cap.
    #[allow(dead_code, reason = "read by the metrics, when they are built")]
    pub(crate) fn open_and_cap(&self) -> (usize, usize) {
        let open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        (open.all, self.per_server)
    }

    /// A place for a stream of `caller`, or the refusal once the server or the caller holds
    /// as many as allowed. Anonymous callers cannot be told apart: they count against the
    /// server's cap only, so none can use a caller's share up for another.
    pub(crate) fn open(&self, caller: &Caller) -> Result<Held, ErrorData> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        if open.all >= self.per_server {
            return Err(refusal(
                format!(
                    "Too many subscription streams: this server holds {}, its cap; retry later",
                    open.all
                ),
                self.per_server,
            ));
        }
        let caller = (!caller.is_anonymous()).then(|| caller.principal().to_owned());
        if let Some(name) = &caller {
            let held = open.by_caller.get(name).copied().unwrap_or(0);
            if held >= self.per_caller {
                return Err(refusal(
                    format!(
                        "Too many subscription streams: this caller holds {held}, the most it may; end one first"
                    ),
                    self.per_caller,
                ));
            }
            *open.by_caller.entry(name.clone()).or_default() += 1;
        }
        open.all += 1;
        Ok(Held {
            open: Arc::clone(&self.open),
            caller,
        })
    }
}

fn refusal(message: String, limit: usize) -> ErrorData {
    ErrorData::new(
        rmcp::model::ErrorCode(-32000),
        message,
        Some(json!({"code": "LIMIT_EXCEEDED", "limit": limit})),
    )
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        open.all = open.all.saturating_sub(1);
        if let Some(name) = &self.caller
            && let Some(held) = open.by_caller.get_mut(name)
        {
            *held = held.saturating_sub(1);
            if *held == 0 {
                open.by_caller.remove(name);
            }
        }
    }
}
