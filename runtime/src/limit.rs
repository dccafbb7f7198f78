//! Rate limits: how often one caller may call one ability. Kept in this process by
//! `governor` (GCRA), or, when replicas share the [store](crate::Store), in the store, so a
//! caller's budget is the same on every replica.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use governor::clock::Clock as _;
use serde_json::json;

use crate::rate::Rate;
use crate::store::{RateTaken, Store};
use crate::{Ability, AbilityError, Caller, ErrorCode};

type Keyed = governor::DefaultKeyedRateLimiter<String>;

/// Every how many checks the local limiters forget callers whose budget is full again.
const PRUNE_EVERY: u64 = 4096;

/// The rate limits of one server: each ability's own rate, or the server's default.
pub(crate) struct RateLimits {
    default: Option<Rate>,
    /// Replicas share it: the budgets are kept there.
    store: Option<Arc<dyn Store>>,
    /// One keyed limiter per distinct rate, keyed by caller and ability.
    local: Mutex<HashMap<Rate, Arc<Keyed>>>,
    checks: AtomicU64,
}

/// Whether a call may go on.
pub(crate) enum RateCheck {
    /// No rate applies, or the budget allows it.
    Pass,
    /// Over the limit.
    Limited(Limited),
    /// The shared store decides.
    Ask(RateFuture),
}

/// A call refused for its rate: the error, and the seconds to wait (none when the budget
/// could not be read).
pub(crate) struct Limited {
    pub(crate) error: AbilityError,
    pub(crate) retry_after: Option<u64>,
}

/// The shared store's answer.
pub(crate) type RateFuture =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), Limited>> + Send>>;

impl RateLimits {
    pub(crate) fn new(default: Option<Rate>, store: &Arc<dyn Store>) -> Self {
        Self {
            default,
            store: store.is_shared().then(|| Arc::clone(store)),
            local: Mutex::new(HashMap::new()),
            checks: AtomicU64::new(0),
        }
    }

    /// Take one call of `ability` by `caller` from its budget.
    pub(crate) fn check(&self, ability: &Ability, caller: &Caller) -> RateCheck {
        let Some(rate) = ability.rate().or(self.default) else {
            return RateCheck::Pass;
        };
        // The ability first: its name has no space, so the first space splits the key. NUL,
        // which PostgreSQL text cannot hold, is escaped (with the escape itself).
        let principal = caller.principal();
        let key = if principal.contains(['\\', '\0']) {
            let escaped = principal.replace('\\', "\\\\").replace('\0', "\\0");
            format!("{} {escaped}", ability.name())
        } else {
            format!("{} {principal}", ability.name())
        };
        let name = ability.name().to_owned();
        if let Some(store) = &self.store {
            let store = Arc::clone(store);
            return RateCheck::Ask(Box::pin(async move {
                let taken = store
                    .take_rate(&key, rate.calls(), rate.period_ms(), crate::clock::now_ms())
                    .await
                    .map_err(|e| {
                        tracing::error!(error = %e, "the store could not count a rate limit");
                        Limited {
                            error: AbilityError::internal("the rate limit could not be checked"),
                            retry_after: None,
                        }
                    })?;
                match taken {
                    RateTaken::Allowed => Ok(()),
                    RateTaken::Limited { retry_after_ms } => {
                        Err(limited(&name, rate, retry_after_ms))
                    }
                }
            }));
        }
        let limiter = self.limiter(rate);
        if self.checks.fetch_add(1, Ordering::Relaxed) % PRUNE_EVERY == PRUNE_EVERY - 1 {
            limiter.retain_recent();
        }
        match limiter.check_key(&key) {
            Ok(()) => RateCheck::Pass,
            Err(not_until) => {
                let wait = not_until.wait_time_from(limiter.clock().now());
                let wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX).max(1);
                RateCheck::Limited(limited(&name, rate, wait_ms))
            }
        }
    }

    fn limiter(&self, rate: Rate) -> Arc<Keyed> {
        let mut local = self.local.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(local.entry(rate).or_insert_with(|| {
            let quota = governor::Quota::with_period(Duration::from_millis(rate.interval_ms()))
                .unwrap_or_else(|| governor::Quota::per_second(rate.burst()))
                .allow_burst(rate.burst());
            Arc::new(governor::RateLimiter::keyed(quota))
        }))
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
