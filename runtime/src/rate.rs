//! A call rate: how many calls a caller may make in a period (`"10/min"`).

use std::fmt;
use std::num::NonZeroU32;
use std::str::FromStr;
use std::time::Duration;

/// How many calls a caller may make in a period: `"10/min"`, `Rate::new(10, 60 s)`.
///
/// A rate allows bursts of up to `calls` and then one call every `period / calls` (the generic
/// cell rate algorithm): `10/min` lets a caller make 10 calls at once, then one every 6 s.
///
/// ```
/// use abilities::config::Rate;
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

    /// The period in milliseconds.
    pub(crate) fn period_ms(&self) -> u64 {
        self.period_ms
    }

    /// The period the calls are counted over.
    pub fn period(&self) -> Duration {
        Duration::from_millis(self.period_ms)
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

pub use abilities_core::{RateError, RateProblem};

impl FromStr for Rate {
    type Err = RateError;

    /// `N/unit` or `N/Kunit`, the unit one of `s`, `sec`, `second`, `m`, `min`, `minute`,
    /// `h`, `hour`, `d`, `day` (plurals allowed): `"10/min"`, `"100/15min"`.
    fn from_str(text: &str) -> Result<Self, RateError> {
        let (calls, period_s) = abilities_core::parse_rate(text)?;
        Ok(Self::from_checked(calls, period_s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
