//! What the pipeline learns about one call, for the transport in front of rmcp: whether the
//! caller held the ability's scope, and when a rate limit says to come back. The HTTP gate
//! puts a [`Reporter`] in the request's extensions and reads the [`Report`] for its status
//! codes (`403`, `429`), instead of reading a body again or running a stage a second time.

use std::sync::Arc;

use tokio::sync::watch;

/// What was learned so far.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Report {
    /// The permission check ran: `Ok` when the caller held the scope, else the scope lacked.
    pub(crate) permission: Option<Result<(), String>>,
    /// The call was refused for its rate: the seconds to wait.
    pub(crate) retry_after: Option<u64>,
}

/// The pipeline's end of a report (cheap to clone; the report is complete once every clone
/// is dropped).
#[derive(Clone, Debug)]
pub(crate) struct Reporter(Arc<watch::Sender<Report>>);

/// The transport's end of a report.
#[derive(Debug)]
pub(crate) struct Reading(watch::Receiver<Report>);

/// A new report: the end to put in the request's extensions, and the end to read.
pub(crate) fn report() -> (Reporter, Reading) {
    let (tx, rx) = watch::channel(Report::default());
    (Reporter(Arc::new(tx)), Reading(rx))
}

impl Reporter {
    /// The permission check's outcome.
    pub(crate) fn permission(&self, outcome: Result<(), &str>) {
        let outcome = outcome.map_err(str::to_owned);
        self.0.send_modify(|r| r.permission = Some(outcome));
    }

    /// The call checks no single ability's scope before it starts (a meta or MCP-AQL tool,
    /// which answers refusals in its own results): the gate has nothing to refuse.
    pub(crate) fn no_scope(&self) {
        self.0.send_modify(|r| r.permission = Some(Ok(())));
    }

    /// A refusal for the call's rate.
    pub(crate) fn rate_limited(&self, retry_after: u64) {
        self.0.send_modify(|r| r.retry_after = Some(retry_after));
    }
}

impl Reading {
    /// The permission check's outcome, once it ran; `None` when the request was answered
    /// without one (every [`Reporter`] dropped).
    pub(crate) async fn permission(&mut self) -> Option<Result<(), String>> {
        if let Ok(report) = self.0.wait_for(|r| r.permission.is_some()).await {
            return report.permission.clone();
        }
        self.0.borrow().permission.clone()
    }

    /// What is known now.
    pub(crate) fn now(&self) -> Report {
        self.0.borrow().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_reading_waits_for_the_permission_or_the_end() {
        let (reporter, mut reading) = report();
        let other = reporter.clone();
        let waiting = tokio::spawn(async move { reading.permission().await });
        other.permission(Err("posts:write"));
        assert_eq!(waiting.await.unwrap(), Some(Err("posts:write".to_owned())));

        let (reporter, mut reading) = report();
        reporter.rate_limited(3);
        drop(reporter);
        assert_eq!(reading.permission().await, None);
        assert_eq!(reading.now().retry_after, Some(3));
    }
}
