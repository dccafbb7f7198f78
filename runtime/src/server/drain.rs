//! A server told to stop drains: readiness fails, no new session or listen stream is opened,
//! the listen streams open end with a hint to listen again (on another replica), and the
//! requests in flight finish within the grace period. Its running tasks go on while it
//! lives; a task still running when it is gone is taken over or failed by the replicas that
//! share its store, as for any replica that stops.

use std::fmt;
use std::time::Duration;

use tokio::sync::watch;

use super::Server;

/// How long the readiness probe waits for the store.
const STORE_PROBE: Duration = Duration::from_secs(2);

/// Whether the server drains, and a way to wait until it does.
pub(crate) struct Drain(watch::Sender<bool>);

impl Drain {
    pub(crate) fn new() -> Self {
        Self(watch::Sender::new(false))
    }

    pub(crate) fn is_draining(&self) -> bool {
        *self.0.borrow()
    }

    /// Until the server drains.
    pub(crate) async fn started(&self) {
        let mut draining = self.0.subscribe();
        // The sender lives as long as the server: an error would only mean it is gone.
        let _ = draining.wait_for(|draining| *draining).await;
    }
}

/// Why a server is not ready for more work ([`Server::ready`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NotReady {
    /// It drains: it was told to stop.
    Draining,
    /// Its store did not answer (within 2 s), with what went wrong.
    Store(String),
}

impl fmt::Display for NotReady {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Draining => f.write_str("draining"),
            Self::Store(why) => write!(f, "the store does not answer: {why}"),
        }
    }
}

impl std::error::Error for NotReady {}

impl Server {
    /// Stop taking new work, as a replica about to stop does: readiness fails, no new
    /// session (protocol 2025) or listen stream is opened, and the listen streams open end
    /// with a hint to listen again. Requests and sessions already open are served on.
    /// [`serve_http`](Self::serve_http) drains on `SIGTERM` or Ctrl-C, then lets the
    /// requests in flight finish within [`HttpConfig::drain_grace`](crate::HttpConfig::drain_grace).
    pub fn drain(&self) {
        if !self.inner.drain.0.send_replace(true) {
            tracing::info!("draining: no new sessions or listen streams; calls in flight finish");
        }
    }

    /// Whether the server [drains](Self::drain).
    pub fn is_draining(&self) -> bool {
        self.inner.drain.is_draining()
    }

    /// Whether the server is ready for more work (what the readiness probe answers): not
    /// draining, and its store answers within 2 s.
    pub async fn ready(&self) -> Result<(), NotReady> {
        if self.is_draining() {
            return Err(NotReady::Draining);
        }
        match tokio::time::timeout(STORE_PROBE, self.inner.tasks.store_answers()).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(error)) => Err(NotReady::Store(error.to_string())),
            Err(_) => Err(NotReady::Store(format!(
                "no answer within {} s",
                STORE_PROBE.as_secs()
            ))),
        }
    }
}
