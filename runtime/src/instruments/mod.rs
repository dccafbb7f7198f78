//! What the `metrics` and `otel` features install in a server, held as one value: the
//! registry calls are counted in, and whether spans are made. The rooms that count and trace
//! (tasks, the store, MCP-AQL's confirmation gate, the transports) ask it without a `cfg`:
//! with a feature off its part is absent, and what it would do is nothing, compiled away.

mod store;

pub(crate) use store::Measured;

use std::future::Future;
#[cfg(any(feature = "metrics", feature = "otel"))]
use std::sync::Arc;

/// The server's metrics (and where to serve them) and tracer, as the builder installed them.
#[derive(Clone, Default)]
pub(crate) struct Instruments {
    #[cfg(feature = "metrics")]
    metrics: Option<(Arc<crate::metrics::Metrics>, crate::metrics::MetricsConfig)>,
    #[cfg(feature = "otel")]
    tracing: Option<Arc<crate::otel::Tracing>>,
}

impl std::fmt::Debug for Instruments {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Instruments").finish_non_exhaustive()
    }
}

#[cfg(feature = "metrics")]
impl Instruments {
    /// The same, counting in `metrics`, served where `config` says.
    pub(crate) fn counting(
        mut self,
        metrics: Option<(Arc<crate::metrics::Metrics>, crate::metrics::MetricsConfig)>,
    ) -> Self {
        self.metrics = metrics;
        self
    }

    /// The metrics, when the server counts.
    pub(crate) fn metrics(&self) -> Option<&Arc<crate::metrics::Metrics>> {
        self.metrics.as_ref().map(|(metrics, _)| metrics)
    }

    /// The metrics and where to serve them, when the server counts.
    pub(crate) fn metrics_config(
        &self,
    ) -> Option<(
        &Arc<crate::metrics::Metrics>,
        &crate::metrics::MetricsConfig,
    )> {
        self.metrics
            .as_ref()
            .map(|(metrics, config)| (metrics, config))
    }
}

#[cfg(feature = "otel")]
impl Instruments {
    /// The same, tracing with `tracing`.
    pub(crate) fn tracing_with(mut self, tracing: Option<Arc<crate::otel::Tracing>>) -> Self {
        self.tracing = tracing;
        self
    }

    /// The tracer, when the server traces.
    pub(crate) fn tracing(&self) -> Option<&Arc<crate::otel::Tracing>> {
        self.tracing.as_ref()
    }
}

impl Instruments {
    /// A task ended with `status` (`completed`, `failed`, `cancelled`).
    pub(crate) fn task_ended(&self, status: &'static str) {
        #[cfg(feature = "metrics")]
        if let Some(metrics) = self.metrics() {
            metrics.task_ended(status);
        }
        let _ = status;
    }

    /// MCP-AQL's confirmation gate `issued`, `redeemed` or `refused` a token.
    #[cfg_attr(
        not(feature = "aql"),
        allow(dead_code, reason = "counted by the MCP-AQL surface")
    )]
    pub(crate) fn confirmation(&self, outcome: &'static str) {
        #[cfg(feature = "metrics")]
        if let Some(metrics) = self.metrics() {
            metrics.confirmation(outcome);
        }
        let _ = outcome;
    }

    /// Have the metrics read an endpoint's open sessions (`read`: `None` once the endpoint
    /// is gone, `Some(None)` when it cannot tell now) against its cap of `max`.
    pub(crate) fn count_sessions(
        &self,
        read: impl Fn() -> Option<Option<usize>> + Send + Sync + 'static,
        max: usize,
    ) {
        #[cfg(feature = "metrics")]
        if let Some(metrics) = self.metrics() {
            metrics.count_sessions(read, max);
            return;
        }
        let _ = (read, max);
    }

    /// Whether the store's operations are timed or traced: if not, it is not wrapped.
    pub(crate) fn watch_store(&self) -> bool {
        #[cfg(feature = "metrics")]
        if self.metrics.is_some() {
            return true;
        }
        #[cfg(feature = "otel")]
        if self.tracing.is_some() {
            return true;
        }
        false
    }

    /// The store's operation `name` (`work`), timed in the metrics and in a span of its own
    /// below the request's.
    pub(crate) async fn store_operation<T, E>(
        &self,
        name: &'static str,
        work: impl Future<Output = Result<T, E>>,
    ) -> Result<T, E> {
        #[cfg(feature = "otel")]
        let span = crate::otel::store(name);
        #[cfg(feature = "metrics")]
        let started = std::time::Instant::now();
        #[cfg(feature = "otel")]
        let work = crate::otel::within(span.as_ref(), work);
        let out = work.await;
        #[cfg(feature = "otel")]
        if let Some(cx) = &span {
            crate::otel::end(cx, out.as_ref().map(drop).map_err(|_| "STORE_ERROR"));
        }
        #[cfg(feature = "metrics")]
        if let Some(metrics) = self.metrics() {
            metrics.store_operation(name, started.elapsed().as_secs_f64());
        }
        let _ = name;
        out
    }

    /// A task's run (`run`, ending with its error code when it failed) in a span of its own,
    /// below the span of the request that created it.
    pub(crate) fn task_run(
        tool: &str,
        id: &str,
        run: impl Future<Output = Result<(), String>> + Send + 'static,
    ) -> impl Future<Output = ()> + Send + 'static {
        #[cfg(feature = "otel")]
        let span = crate::otel::task(tool, id);
        let _ = (tool, id);
        async move {
            #[cfg(feature = "otel")]
            {
                let ended = crate::otel::within(span.as_ref(), run).await;
                if let Some(cx) = &span {
                    crate::otel::end(cx, ended.as_ref().map(drop).map_err(String::as_str));
                }
            }
            #[cfg(not(feature = "otel"))]
            let _ = run.await;
        }
    }
}
