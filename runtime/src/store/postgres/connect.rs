//! Connecting a PostgreSQL store: the pool, the tables created (replicas starting at once take
//! turns), and the listener for what other replicas publish.

use std::time::Duration;

use deadpool_postgres::{Config, ManagerConfig, RecyclingMethod, Runtime};
use tokio_postgres::NoTls;
use tokio_util::sync::CancellationToken;

use super::{MIGRATION_LOCK, PostgresStore, failed};
use crate::store::StoreError;

impl PostgresStore {
    /// Connect to the database at `url` (`postgres://user:password@host:port/db`), with a
    /// pool of at most 16 connections, creating the tables if missing, and start listening
    /// for other replicas' resource updates.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        let mut config = Config::new();
        config.url = Some(url.to_owned());
        config.manager = Some(ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        });
        config.pool = Some(deadpool_postgres::PoolConfig {
            max_size: 16,
            timeouts: deadpool_postgres::Timeouts {
                wait: Some(Duration::from_secs(10)),
                create: Some(Duration::from_secs(10)),
                recycle: Some(Duration::from_secs(5)),
            },
            ..deadpool_postgres::PoolConfig::default()
        });
        let pool = config
            .create_pool(Some(Runtime::Tokio1), NoTls)
            .map_err(failed)?;
        let mut client = pool.get().await.map_err(failed)?;
        let tx = client.transaction().await.map_err(failed)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
            .await
            .map_err(failed)?;
        tx.batch_execute(crate::store::tables::POSTGRES)
            .await
            .map_err(failed)?;
        tx.commit().await.map_err(failed)?;
        drop(client);
        let origin = crate::store::heard::origin().map_err(failed)?;
        let heard = crate::store::heard::Heard::new();
        let stop = CancellationToken::new();
        tokio::spawn(crate::store::listener::listen(
            url.to_owned(),
            origin.clone(),
            heard.clone(),
            stop.clone(),
        ));
        Ok(Self {
            pool,
            origin,
            updates: heard.updates,
            tasks: heard.tasks,
            sessions: heard.sessions,
            _listening: stop.drop_guard(),
        })
    }
}
