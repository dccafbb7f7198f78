//! What a server counts ([`Server::metrics`]) and the figures read at each scrape: running
//! tasks and listen streams, against their caps.

use std::sync::Arc;

use super::Server;
use crate::metrics::{Metrics, MetricsConfig};

impl Server {
    /// What the server counts, when the builder asked for [metrics](crate::ServerBuilder::metrics).
    pub fn metrics(&self) -> Option<&Metrics> {
        self.inner.instruments.metrics().map(|metrics| &**metrics)
    }

    /// Where the builder said to serve the metrics.
    pub(crate) fn metrics_config(&self) -> Option<(&Arc<Metrics>, &MetricsConfig)> {
        self.inner.instruments.metrics_config()
    }

    /// Have the metrics read the running tasks and the open listen streams at each scrape
    /// (through a weak handle: the metrics never keep the server alive).
    pub(super) fn sample_state(&self) {
        let Some(metrics) = self.inner.instruments.metrics() else {
            return;
        };
        let inner = Arc::downgrade(&self.inner);
        metrics.sample(move |metrics| {
            let Some(inner) = inner.upgrade() else {
                return;
            };
            let ((working, waiting), cap) = inner.tasks.running_and_cap();
            metrics.set_tasks("working", working);
            metrics.set_tasks("input_required", waiting);
            metrics.set_tasks_max(cap);
            let (open, cap) = inner.streams.open_and_cap();
            metrics.set_streams(open, cap);
        });
    }
}
