//! The PostgreSQL store's idempotency claims: a key claimed once across replicas, its
//! lease renewed while its call runs, its outcome settled or the claim released.

use serde_json::Value;

use super::{failed, int};
use crate::store::{Claim, Claimed, StoreError, StoreFuture};

impl super::PostgresStore {
    pub(super) fn claim_sql<'a>(&'a self, c: &'a Claim) -> StoreFuture<'a, Claimed> {
        Box::pin(async move {
            let client = self.client().await?;
            // Insert, or take over a record whose window ended; otherwise read what is there.
            // A record freed between the two (its call released it) is claimed again.
            for _ in 0..3 {
                let taken = client
                    .execute(
                        "INSERT INTO abilities_idempotency
                            (holder, key, digest, started_at_ms, expires_at_ms, owner,
                             lease_until_ms)
                         VALUES ($1, $2, $3, $4, $5, $6, $7)
                         ON CONFLICT (holder, key) DO UPDATE
                         SET digest = EXCLUDED.digest, started_at_ms = EXCLUDED.started_at_ms,
                             expires_at_ms = EXCLUDED.expires_at_ms, outcome = NULL,
                             owner = EXCLUDED.owner, lease_until_ms = EXCLUDED.lease_until_ms
                         WHERE abilities_idempotency.expires_at_ms < EXCLUDED.started_at_ms",
                        &[
                            &c.holder,
                            &c.key,
                            &c.digest,
                            &int(c.now_ms),
                            &int(c.expires_at_ms),
                            &c.owner,
                            &int(c.lease_until_ms),
                        ],
                    )
                    .await
                    .map_err(failed)?;
                if taken == 1 {
                    return Ok(Claimed::New);
                }
                let row = client
                    .query_opt(
                        "SELECT digest, started_at_ms, outcome, lease_until_ms
                         FROM abilities_idempotency WHERE holder = $1 AND key = $2",
                        &[&c.holder, &c.key],
                    )
                    .await
                    .map_err(failed)?;
                if let Some(row) = row {
                    let outcome: Option<String> = row.get(2);
                    return Ok(crate::store::tables::existing(
                        c,
                        &row.get::<_, String>(0),
                        row.get(1),
                        row.get(3),
                        outcome.as_deref(),
                    ));
                }
            }
            Err(StoreError::failed("an idempotency key kept changing hands"))
        })
    }

    pub(super) fn settle_sql<'a>(
        &'a self,
        holder: &'a str,
        key: &'a str,
        owner: &'a str,
        outcome: &'a Value,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            self.client()
                .await?
                .execute(
                    "UPDATE abilities_idempotency SET outcome = $4
                     WHERE holder = $1 AND key = $2 AND owner = $3",
                    &[&holder, &key, &owner, &outcome.to_string()],
                )
                .await
                .map(drop)
                .map_err(failed)
        })
    }

    pub(super) fn renew_sql<'a>(
        &'a self,
        holder: &'a str,
        key: &'a str,
        owner: &'a str,
        lease_until_ms: u64,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            self.client()
                .await?
                .execute(
                    "UPDATE abilities_idempotency
                     SET lease_until_ms = GREATEST(lease_until_ms, $4)
                     WHERE holder = $1 AND key = $2 AND owner = $3 AND outcome IS NULL",
                    &[&holder, &key, &owner, &int(lease_until_ms)],
                )
                .await
                .map(drop)
                .map_err(failed)
        })
    }

    pub(super) fn release_sql<'a>(
        &'a self,
        holder: &'a str,
        key: &'a str,
        owner: &'a str,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            self.client()
                .await?
                .execute(
                    "DELETE FROM abilities_idempotency
                     WHERE holder = $1 AND key = $2 AND owner = $3 AND outcome IS NULL",
                    &[&holder, &key, &owner],
                )
                .await
                .map(drop)
                .map_err(failed)
        })
    }
}
