//! Rate limits: how often one caller may call one ability. GCRA (`abilities_core::gcra`, as
//! the stores count it), kept in this process, or, when replicas share the
//! [store](crate::Store), in the store, so a caller's budget is the same on every replica.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::json;

use super::{Call, Reporter, Stage, StageFuture};
use crate::rate::Rate;
use crate::store::{RateTaken, Store};
use crate::{Ability, AbilityError, Caller, ErrorCode};

/// Every how many checks the local budgets forget callers whose budget is full again.
const PRUNE_EVERY: u64 = 4096;

/// The rate limits of one server: each ability's own rate, or the server's default.
pub(crate) struct RateLimits {
    default: Option<Rate>,
    /// Replicas share it: the budgets are kept there.
    store: Option<Arc<dyn Store>>,
    /// Each budget's theoretical arrival time (ms), keyed by ability and caller.
    local: Mutex<HashMap<String, u64>>,
    checks: AtomicU64,
}

/// A call refused for its rate: the error, and the seconds to wait (none when the budget
/// could not be read).
struct Limited {
    error: AbilityError,
    retry_after: Option<u64>,
}

impl Limited {
    /// The error, its wait reported to the HTTP gate.
    fn reported(self, report: Option<&Reporter>) -> AbilityError {
        if let (Some(report), Some(seconds)) = (report, self.retry_after) {
            report.rate_limited(seconds);
        }
        self.error
    }
}

/// The rate stage: one call of the ability taken from the caller's budget, in this process
/// (`check`) or in the shared store (`wait`).
impl Stage for RateLimits {
    fn waits(&self) -> bool {
        self.store.is_some()
    }

    fn check(&self, call: &mut Call<'_>) -> Result<(), AbilityError> {
        if self.store.is_some() {
            return Ok(());
        }
        self.take_local(call.ability, call.ctx.caller())
            .map_err(|limited| limited.reported(call.report))
    }

    fn wait<'a>(&'a self, call: &'a Call<'_>) -> Option<StageFuture<'a>> {
        let store = self.store.as_ref()?;
        let rate = self.rate_of(call.ability)?;
        let key = key(call.ability, call.ctx.caller());
        let (name, report) = (call.ability.name(), call.report);
        Some(Box::pin(async move {
            take_shared(store, rate, &key, name)
                .await
                .map_err(|limited| limited.reported(report))
        }))
    }
}

/// One call taken from a budget the replicas share.
async fn take_shared(
    store: &Arc<dyn Store>,
    rate: Rate,
    key: &str,
    name: &str,
) -> Result<(), Limited> {
    let taken = store
        .take_rate(key, rate.calls(), rate.period_ms(), crate::clock::now_ms())
        .await;
    match taken {
        Ok(RateTaken::Allowed) => Ok(()),
        Ok(RateTaken::Limited { retry_after_ms }) => Err(limited(name, rate, retry_after_ms)),
        Err(e) => {
            tracing::error!(error = %e, "the store could not count a rate limit");
            Err(Limited {
                error: AbilityError::internal("the rate limit could not be checked"),
                retry_after: None,
            })
        }
    }
}

/// A budget's key: the ability first (its name has no space, so the first space splits the
/// key), then the principal, NUL (which PostgreSQL text cannot hold) escaped with the escape
/// itself.
fn key(ability: &Ability, caller: &Caller) -> String {
    let principal = caller.principal();
    if principal.contains(['\\', '\0']) {
        let escaped = principal.replace('\\', "\\\\").replace('\0', "\\0");
        format!("{} {escaped}", ability.name())
    } else {
        format!("{} {principal}", ability.name())
    }
}

impl RateLimits {
    pub(crate) fn new(default: Option<Rate>, store: &Arc<dyn Store>) -> Self {
        Self {
            default,
            store: store.is_shared().then(|| Arc::clone(store)),
            local: Mutex::new(HashMap::new()),
            checks: AtomicU64::new(0),
        }
    }

    /// One call of `ability` taken from `caller`'s budget now, outside the stages: for a call
    /// that went on as a confirmed retry (its rate not taken again) whose token was refused.
    pub(crate) async fn take(
        &self,
        ability: &Ability,
        caller: &Caller,
    ) -> Result<(), AbilityError> {
        let taken = match (&self.store, self.rate_of(ability)) {
            (_, None) => Ok(()),
            (None, Some(_)) => self.take_local(ability, caller),
            (Some(store), Some(rate)) => {
                take_shared(store, rate, &key(ability, caller), ability.name()).await
            }
        };
        taken.map_err(|limited| limited.error)
    }

    /// One call taken from a budget kept in this process.
    fn take_local(&self, ability: &Ability, caller: &Caller) -> Result<(), Limited> {
        let Some(rate) = self.rate_of(ability) else {
            return Ok(());
        };
        let key = key(ability, caller);
        let now_ms = crate::clock::now_ms();
        let mut local = self.local.lock().unwrap_or_else(PoisonError::into_inner);
        if self.checks.fetch_add(1, Ordering::Relaxed) % PRUNE_EVERY == PRUNE_EVERY - 1 {
            local.retain(|_, tat| *tat > now_ms);
        }
        let tat = local.get(&key).copied().unwrap_or(0);
        match abilities_core::gcra(tat, rate.calls(), rate.period_ms(), now_ms) {
            Ok(next) => {
                local.insert(key, next);
                Ok(())
            }
            Err(wait_ms) => {
                drop(local);
                Err(limited(ability.name(), rate, wait_ms.max(1)))
            }
        }
    }

    /// The rate that applies to `ability`: its own, or the server's default.
    fn rate_of(&self, ability: &Ability) -> Option<Rate> {
        ability.rate().or(self.default)
    }
}

/// `RATE_LIMITED`, saying when to come back (`details.retry_after`, whole seconds rounded up,
/// as HTTP's `Retry-After` takes them).
fn limited(ability: &str, rate: Rate, retry_after_ms: u64) -> Limited {
    let seconds = retry_after_ms.div_ceil(1000).max(1);
    let error = AbilityError::new(
        ErrorCode::RateLimited,
        format!(
            "'{ability}' allows {} calls per {} s for each caller; retry in {seconds} s",
            rate.calls(),
            rate.period_ms() as f64 / 1000.0
        ),
    )
    .with_details(json!({
        "retry_after": seconds,
        "retry_after_ms": retry_after_ms,
        "limit": rate.calls(),
        "period_s": rate.period_ms() as f64 / 1000.0,
    }));
    Limited {
        error,
        retry_after: Some(seconds),
    }
}
