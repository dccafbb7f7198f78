//! Rate limits: how often one caller may call one ability. Kept in this process by
//! `governor` (GCRA), or, when replicas share the [store](crate::Store), in the store, so a
//! caller's budget is the same on every replica.

use std::collections::HashMap;
use std::fmt;
use std::num::NonZeroU32;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use governor::clock::Clock as _;
use serde_json::json;

use crate::store::{RateTaken, Store};
use crate::{Ability, AbilityError, Caller, ErrorCode};

/// How many calls a caller may make in a period: `"10/min"`, `Rate::new(10, 60 s)`.
///
/// A rate allows bursts of up to `calls` and then one call every `period / calls` (the generic
/// cell rate algorithm): `10/min` lets a caller make 10 calls at once, then one every 6 s.
///
/// ```
/// use abilities::Rate;
/// use std::time::Duration;
///
/// let rate: Rate = "10/min".parse().unwrap();
/// assert_eq!(rate, Rate::new(10, Duration::from_secs(60)).unwrap());
/// assert_eq!(rate.to_string(), "10/60s");
/// assert!("ten a minute".parse::<Rate>().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rate {
    calls: NonZeroU32,
    period_ms: u64,
}

impl Rate {
    /// `calls` per `period`; `None` for no calls, a period under a millisecond, or more than
    /// one call per millisecond.
    pub fn new(calls: u32, period: Duration) -> Option<Self> {
        let period_ms = u64::try_from(period.as_millis()).ok()?;
        // Budgets are counted in whole milliseconds: at most one call per millisecond.
        (period_ms > 0 && u64::from(calls) <= period_ms).then_some(())?;
        Some(Self {
            calls: NonZeroU32::new(calls)?,
            period_ms,
        })
    }

    /// From the attribute's checked form: calls and seconds.
    #[doc(hidden)]
    pub const fn from_checked(calls: u32, period_s: u64) -> Self {
        Self {
            calls: match NonZeroU32::new(calls) {
                Some(calls) => calls,
                None => NonZeroU32::MIN,
            },
            period_ms: period_s.saturating_mul(1000),
        }
    }

    /// How many calls the period allows.
    pub fn calls(&self) -> u32 {
        self.calls.get()
    }

    /// The period the calls are counted over.
    pub fn period(&self) -> Duration {
        Duration::from_millis(self.period_ms)
    }

    /// The time one call takes back from the budget: `period / calls`, at least 1 ms.
    fn interval_ms(&self) -> u64 {
        (self.period_ms / u64::from(self.calls.get())).max(1)
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.period_ms.is_multiple_of(1000) {
            write!(f, "{}/{}s", self.calls, self.period_ms / 1000)
        } else {
            write!(f, "{}/{}ms", self.calls, self.period_ms)
        }
    }
}

/// Why a rate did not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RateError(String);

impl FromStr for Rate {
    type Err = RateError;

    /// `N/unit` or `N/Kunit`, the unit one of `s`, `sec`, `second`, `m`, `min`, `minute`,
    /// `h`, `hour`, `d`, `day` (plurals allowed): `"10/min"`, `"100/15min"`.
    fn from_str(text: &str) -> Result<Self, RateError> {
        let (calls, period_s) = abilities_core::parse_rate(text).map_err(RateError)?;
        Ok(Self::from_checked(calls, period_s))
    }
}

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
    Limited(AbilityError),
    /// The shared store decides.
    Ask(crate::pipeline::StageFuture<'static>),
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
                    .take_rate(&key, rate.calls(), rate.period_ms, crate::clock::now_ms())
                    .await
                    .map_err(|e| {
                        tracing::error!(error = %e, "the store could not count a rate limit");
                        AbilityError::internal("the rate limit could not be checked")
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
                .unwrap_or_else(|| governor::Quota::per_second(rate.calls))
                .allow_burst(rate.calls);
            Arc::new(governor::RateLimiter::keyed(quota))
        }))
    }
}

/// `RATE_LIMITED`, saying when to come back (`details.retry_after`, whole seconds rounded up,
/// as HTTP's `Retry-After` takes them).
fn limited(ability: &str, rate: Rate, retry_after_ms: u64) -> AbilityError {
    let seconds = retry_after_ms.div_ceil(1000).max(1);
    AbilityError::new(
        ErrorCode::RateLimited,
        format!(
            "'{ability}' allows {} calls per {} s for each caller; retry in {seconds} s",
            rate.calls(),
            rate.period_ms as f64 / 1000.0
        ),
    )
    .with_details(json!({
        "retry_after": seconds,
        "retry_after_ms": retry_after_ms,
        "limit": rate.calls(),
        "period_s": rate.period_ms as f64 / 1000.0,
    }))
}

/// GCRA over one budget's theoretical arrival time `tat_ms` (0 when the key is new): the new
/// one if a call at `now_ms` is allowed, or how long until it would be.
pub(crate) fn gcra(tat_ms: u64, calls: u32, period_ms: u64, now_ms: u64) -> Result<u64, u64> {
    let interval = (period_ms / u64::from(calls.max(1))).max(1);
    let next = tat_ms.max(now_ms).saturating_add(interval);
    let ahead = next - now_ms;
    if ahead <= period_ms {
        Ok(next)
    } else {
        Err(ahead - period_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gcra_allows_the_burst_then_one_per_interval() {
        // 3/s: an interval of 333 ms.
        let mut tat = 0;
        for _ in 0..3 {
            tat = gcra(tat, 3, 1000, 10_000).unwrap();
        }
        assert_eq!(gcra(tat, 3, 1000, 10_000), Err(332));
        // One interval later, one more call.
        assert!(gcra(tat, 3, 1000, 10_333).is_ok());
        // A full period later, the whole burst again.
        let mut later = tat;
        for _ in 0..3 {
            later = gcra(later, 3, 1000, 11_000).unwrap();
        }
        assert!(gcra(later, 3, 1000, 11_000).is_err());
    }

    #[test]
    fn rates_parse_and_print() {
        let rate: Rate = "100/15min".parse().unwrap();
        assert_eq!(rate.calls(), 100);
        assert_eq!(rate.period(), Duration::from_secs(900));
        assert_eq!(rate.to_string(), "100/900s");
        assert_eq!(Rate::new(0, Duration::from_secs(1)), None);
        assert_eq!(Rate::new(1, Duration::ZERO), None);
        assert_eq!(Rate::new(1001, Duration::from_secs(1)), None);
        assert!(Rate::new(1000, Duration::from_secs(1)).is_some());
        assert!("0/min".parse::<Rate>().is_err());
    }
}
