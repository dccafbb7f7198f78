//! The metrics over HTTP: the Prometheus exposition and the live view, on the server's app
//! where [`MetricsConfig`](crate::metrics::MetricsConfig) says, or on an address of their own
//! ([`Server::serve_metrics`]).

use axum::Router;

use crate::Server;

impl Server {
    /// `router` with the metrics' routes, when the server counts.
    pub(super) fn observed(&self, router: Router) -> Router {
        #[cfg(feature = "metrics")]
        let router = self.with_metrics(router);
        router
    }
}

/// The exposition and the live view.
#[cfg(feature = "metrics")]
mod exposition {
    use std::net::SocketAddr;
    use std::sync::Arc;

    use axum::Router;
    use axum::http::header;
    use axum::response::IntoResponse;
    use tokio::net::TcpListener;

    use crate::metrics::{CONTENT_TYPE, Metrics};
    use crate::{Server, ServerError};

    /// The live view: one page, no build step, nothing fetched but the exposition it shows.
    const DASHBOARD: &str = include_str!("dashboard.html");

    /// The page may run its own script and read its own origin, and nothing else.
    const DASHBOARD_POLICY: &str = "default-src 'none'; script-src 'unsafe-inline'; \
         style-src 'unsafe-inline'; connect-src 'self'; base-uri 'none'; form-action 'none'; \
         frame-ancestors 'none'";

    impl Server {
        /// `router` with the exposition and the live view where the builder said (nothing when
        /// the server counts nothing).
        pub(crate) fn with_metrics(&self, router: Router) -> Router {
            let Some((metrics, config)) = self.metrics_config() else {
                return router;
            };
            routes(
                router,
                metrics,
                config.metrics_path(),
                config.dashboard_path(),
            )
        }

        /// Serve the exposition at `/metrics` (and the live view where the builder put it) on
        /// `addr`, apart from the MCP endpoint, until Ctrl-C. Fails with
        /// [`ServerError::NoMetrics`] when the builder asked for no metrics.
        pub async fn serve_metrics(&self, addr: SocketAddr) -> Result<(), ServerError> {
            if self.metrics_config().is_none() {
                return Err(ServerError::NoMetrics);
            }
            self.serve_metrics_on(TcpListener::bind(addr).await?).await
        }

        /// The same on a bound `listener` (whose address may be port 0's choice).
        pub async fn serve_metrics_on(&self, listener: TcpListener) -> Result<(), ServerError> {
            let Some((metrics, config)) = self.metrics_config() else {
                return Err(ServerError::NoMetrics);
            };
            let router = routes(
                Router::new(),
                metrics,
                Some("/metrics"),
                config.dashboard_path(),
            );
            crate::transport::http::serve_router(listener, router).await
        }
    }

    fn routes(
        mut router: Router,
        metrics: &Arc<Metrics>,
        path: Option<&str>,
        dashboard: Option<&str>,
    ) -> Router {
        let exposition = {
            let metrics = Arc::clone(metrics);
            move || {
                let metrics = Arc::clone(&metrics);
                async move { ([(header::CONTENT_TYPE, CONTENT_TYPE)], metrics.encode()) }
            }
        };
        if let Some(path) = path {
            router = router.route(path, axum::routing::get(exposition.clone()));
        }
        if let Some(dashboard) = dashboard {
            // The page reads the exposition beside it, whether or not it is served elsewhere.
            let source = format!("{}/metrics", dashboard.trim_end_matches('/'));
            let page = DASHBOARD.replace("{{METRICS_URL}}", &source);
            router = router
                .route(
                    dashboard,
                    axum::routing::get(move || {
                        let page = page.clone();
                        async move {
                            (
                                [
                                    (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                                    (header::CONTENT_SECURITY_POLICY, DASHBOARD_POLICY),
                                    (header::CACHE_CONTROL, "no-store"),
                                ],
                                page,
                            )
                                .into_response()
                        }
                    }),
                )
                .route(&source, axum::routing::get(exposition));
        }
        router
    }
}
