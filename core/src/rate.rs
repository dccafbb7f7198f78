//! Call rates as written in `#[ability(rate = "10/min")]` and on the command line.

/// The units a rate may be written in, with their length in seconds.
const UNITS: &[(&[&str], u64)] = &[
    (&["s", "sec", "second"], 1),
    (&["m", "min", "minute"], 60),
    (&["h", "hour"], 3_600),
    (&["d", "day"], 86_400),
];

/// Why a rate did not parse: the text, and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RateError {
    text: String,
    problem: RateProblem,
}

/// What is wrong with a rate's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RateProblem {
    /// Not calls per period (`"10/min"`).
    Malformed,
    /// No calls allowed (`"0/min"`).
    NoCalls,
    /// A period of nothing (`"10/0min"`).
    NoPeriod,
    /// A period over a year.
    TooLong,
    /// More than one call per millisecond.
    TooFine,
}

impl RateError {
    /// The text that did not parse.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// What is wrong with it.
    pub fn problem(&self) -> RateProblem {
        self.problem
    }
}

impl std::fmt::Display for RateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = &self.text;
        match self.problem {
            RateProblem::Malformed => write!(
                f,
                "invalid rate \"{text}\": expected calls per period, like \"10/min\", \"5/s\", \"1000/hour\" or \"100/15min\""
            ),
            RateProblem::NoCalls => write!(
                f,
                "invalid rate \"{text}\": the number of calls must be at least 1"
            ),
            RateProblem::NoPeriod => write!(
                f,
                "invalid rate \"{text}\": the period must be longer than 0"
            ),
            RateProblem::TooLong => {
                write!(
                    f,
                    "invalid rate \"{text}\": the period must be a year at most"
                )
            }
            RateProblem::TooFine => write!(
                f,
                "invalid rate \"{text}\": at most one call per millisecond can be counted"
            ),
        }
    }
}

impl std::error::Error for RateError {}

/// `"10/min"` as (10 calls, 60 s): a positive count, `/`, then a unit (`s`, `sec`, `second`,
/// `m`, `min`, `minute`, `h`, `hour`, `d`, `day`, a plural `s` allowed), optionally preceded
/// by a count of units (`"100/15min"`).
pub fn parse_rate(text: &str) -> Result<(u32, u64), RateError> {
    let refuse = |problem| RateError {
        text: text.to_owned(),
        problem,
    };
    let expected = || refuse(RateProblem::Malformed);
    let (calls, period) = text.split_once('/').ok_or_else(expected)?;
    let calls: u32 = calls.trim().parse().map_err(|_| expected())?;
    if calls == 0 {
        return Err(refuse(RateProblem::NoCalls));
    }
    let period = period.trim();
    let digits = period.bytes().take_while(u8::is_ascii_digit).count();
    let (count, unit) = period.split_at(digits);
    let count: u64 = if count.is_empty() {
        1
    } else {
        count.parse().map_err(|_| expected())?
    };
    let unit = unit.trim();
    let unit = unit
        .strip_suffix('s')
        .filter(|u| u.len() > 1)
        .unwrap_or(unit);
    let seconds = UNITS
        .iter()
        .find(|(names, _)| names.contains(&unit))
        .map(|(_, seconds)| *seconds)
        .ok_or_else(expected)?;
    if count == 0 {
        return Err(refuse(RateProblem::NoPeriod));
    }
    let period = count
        .checked_mul(seconds)
        .filter(|s| *s <= 366 * 86_400)
        .ok_or_else(|| refuse(RateProblem::TooLong))?;
    if u64::from(calls) > period.saturating_mul(1000) {
        return Err(refuse(RateProblem::TooFine));
    }
    Ok((calls, period))
}

/// GCRA over one budget's theoretical arrival time `tat_ms` (0 when the key is new): the new
/// one if a call at `now_ms` is allowed, or how long until it would be.
pub fn gcra(tat_ms: u64, calls: u32, period_ms: u64, now_ms: u64) -> Result<u64, u64> {
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
    use super::{gcra, parse_rate};

    #[test]
    fn rates() {
        assert_eq!(parse_rate("10/min"), Ok((10, 60)));
        assert_eq!(parse_rate("5/s"), Ok((5, 1)));
        assert_eq!(parse_rate("5/secs"), Ok((5, 1)));
        assert_eq!(parse_rate("1000/hour"), Ok((1000, 3600)));
        assert_eq!(parse_rate("1000/hours"), Ok((1000, 3600)));
        assert_eq!(parse_rate("2/h"), Ok((2, 3600)));
        assert_eq!(parse_rate("100/15min"), Ok((100, 900)));
        assert_eq!(parse_rate(" 3 / day "), Ok((3, 86_400)));
    }

    #[test]
    fn refusals() {
        for bad in [
            "",
            "10",
            "10/",
            "/min",
            "0/min",
            "-1/min",
            "10/fortnight",
            "10/0min",
            "x/min",
            "10/400d",
            "10/min/s",
            "5/ms",
            "5/hs",
        ] {
            assert!(parse_rate(bad).is_err(), "{bad} was accepted");
        }
        let refused = parse_rate("0/min").unwrap_err();
        assert_eq!(refused.problem(), super::RateProblem::NoCalls);
        assert_eq!(
            refused.to_string(),
            "invalid rate \"0/min\": the number of calls must be at least 1"
        );
        assert_eq!(
            parse_rate("10/fortnight").unwrap_err().problem(),
            super::RateProblem::Malformed
        );
        assert_eq!(
            parse_rate("1/400d").unwrap_err().problem(),
            super::RateProblem::TooLong
        );
    }

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
}
