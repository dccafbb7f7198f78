//! Where a server shows what it counts: the exposition's path and the live view's.

/// Where a server shows what it counts ([`ServerBuilder::metrics`](crate::ServerBuilder::metrics)).
///
/// ```
/// use abilities::metrics::MetricsConfig;
///
/// // `/metrics` on the server's HTTP listener (the default), and the live view.
/// let config = MetricsConfig::default().dashboard("/dashboard");
/// assert_eq!(config.dashboard_path(), Some("/dashboard"));
/// // Only on an address of its own (`Server::serve_metrics`), not beside the MCP endpoint.
/// let private = MetricsConfig::default().path(None);
/// assert_eq!(private.metrics_path(), None);
/// ```
#[derive(Clone, Debug)]
pub struct MetricsConfig {
    path: Option<String>,
    dashboard: Option<String>,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        Self {
            path: Some("/metrics".to_owned()),
            dashboard: None,
        }
    }
}

impl MetricsConfig {
    /// The path of the exposition on the server's HTTP app (default `/metrics`), served
    /// without the server's authenticator; `None` serves it only on an address of its own
    /// ([`Server::serve_metrics`](crate::Server::serve_metrics)), and beside a live view
    /// configured with [`dashboard`](Self::dashboard).
    pub fn path(mut self, path: Option<&str>) -> Self {
        self.path = path.map(str::to_owned);
        self
    }

    /// Serve the live view (a page that shows the same figures, refreshing every 2 s) at
    /// `path`, and the exposition it reads at `{path}/metrics`, on the server's HTTP app and
    /// on [`Server::serve_metrics`](crate::Server::serve_metrics)'s address. Off unless set.
    pub fn dashboard(mut self, path: &str) -> Self {
        self.dashboard = Some(path.to_owned());
        self
    }

    /// Where the exposition is served on the server's HTTP app.
    pub fn metrics_path(&self) -> Option<&str> {
        self.path.as_deref()
    }

    /// Where the live view is served on the server's HTTP app.
    pub fn dashboard_path(&self) -> Option<&str> {
        self.dashboard.as_deref()
    }
}
