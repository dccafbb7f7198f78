//! The Redis store's tasks and idempotency claims: a task as one hash, read back into a
//! [`TaskRecord`], and the scripts that change tasks and claims.

use std::collections::HashMap;

use super::{PREFIX, RedisStore, failed, opt, opt_json, pair_key};
use crate::store::{Claim, Claimed, StoreFuture, TaskInsert, TaskLimits, TaskRecord, TaskStatus};

/// A task's hash as a record; `None` when it holds no task.
pub(super) fn task(id: &str, fields: &HashMap<String, String>) -> Option<TaskRecord> {
    let number = |name: &str| fields.get(name).and_then(|v| v.parse::<u64>().ok());
    let json = |name: &str| fields.get(name).and_then(|v| serde_json::from_str(v).ok());
    Some(TaskRecord {
        id: id.to_owned(),
        owner: fields.get("owner")?.clone(),
        // A status this version does not know reads as failed, never as running.
        status: TaskStatus::parse(fields.get("status")?).unwrap_or(TaskStatus::Failed),
        status_message: fields.get("message").cloned(),
        created_at_ms: number("created")?,
        updated_at_ms: number("updated").unwrap_or(0),
        alive_at_ms: number("alive").unwrap_or(0),
        ttl_ms: number("ttl").unwrap_or(0),
        poll_interval_ms: number("poll").unwrap_or(0),
        input_requests: json("input"),
        result: json("result"),
        error: json("error"),
    })
}

impl RedisStore {
    pub(super) fn insert_task_script(
        &self,
        r: TaskRecord,
        limits: TaskLimits,
    ) -> StoreFuture<'_, TaskInsert> {
        Box::pin(async move {
            let per_owner = limits.per_owner.map_or(-1, i64::from);
            let answer: (i64, Option<u64>) = self
                .scripts
                .insert_task
                .arg(PREFIX)
                .arg(&r.id)
                .arg(&r.owner)
                .arg(r.status.as_str())
                .arg(opt(r.status_message.as_deref()))
                .arg(r.created_at_ms)
                .arg(r.updated_at_ms)
                .arg(r.ttl_ms)
                .arg(r.poll_interval_ms)
                .arg(r.expires_at_ms())
                .arg(opt_json(r.input_requests.as_ref()))
                .arg(opt_json(r.result.as_ref()))
                .arg(opt_json(r.error.as_ref()))
                .arg(limits.per_server)
                .arg(per_owner)
                .arg(limits.lease_ms)
                .invoke_async(&mut self.conn())
                .await
                .map_err(failed)?;
            let running = answer.1.unwrap_or(0);
            Ok(match answer.0 {
                1 => TaskInsert::OwnerFull { running },
                2 => TaskInsert::ServerFull { running },
                _ => TaskInsert::Inserted,
            })
        })
    }

    pub(super) fn update_task_script(&self, r: TaskRecord) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            let _: i64 = self
                .scripts
                .update_task
                .arg(PREFIX)
                .arg(&r.id)
                .arg(r.status.as_str())
                .arg(opt(r.status_message.as_deref()))
                .arg(r.updated_at_ms)
                .arg(opt_json(r.input_requests.as_ref()))
                .arg(opt_json(r.result.as_ref()))
                .arg(opt_json(r.error.as_ref()))
                .invoke_async(&mut self.conn())
                .await
                .map_err(failed)?;
            Ok(())
        })
    }

    pub(super) fn fail_abandoned_script<'a>(
        &'a self,
        f: &'a TaskRecord,
        lease_ms: u64,
    ) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let failed_now: i64 = self
                .scripts
                .fail_abandoned
                .arg(PREFIX)
                .arg(&f.id)
                .arg(f.status.as_str())
                .arg(opt(f.status_message.as_deref()))
                .arg(f.updated_at_ms)
                .arg(opt_json(f.error.as_ref()))
                .arg(lease_ms)
                .invoke_async(&mut self.conn())
                .await
                .map_err(failed)?;
            Ok(failed_now == 1)
        })
    }

    pub(super) fn claim_script<'a>(&'a self, c: &'a Claim) -> StoreFuture<'a, Claimed> {
        Box::pin(async move {
            let answer: (
                i64,
                Option<String>,
                Option<i64>,
                Option<i64>,
                Option<String>,
            ) = self
                .scripts
                .claim
                .key(pair_key("idempotency", &c.holder, &c.key))
                .arg(PREFIX)
                .arg(&c.digest)
                .arg(c.now_ms)
                .arg(c.expires_at_ms)
                .arg(&c.owner)
                .arg(c.lease_until_ms)
                .invoke_async(&mut self.conn())
                .await
                .map_err(failed)?;
            Ok(match answer {
                (1, ..) => Claimed::New,
                (_, digest, started, lease, outcome) => crate::store::tables::existing(
                    c,
                    digest.as_deref().unwrap_or_default(),
                    started.unwrap_or(0),
                    lease.unwrap_or(0),
                    outcome.as_deref(),
                ),
            })
        })
    }
}
