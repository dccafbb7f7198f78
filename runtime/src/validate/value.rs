//! JSON values compared as JSON Schema compares them: numbers by value and exactly (an integer
//! beside a float too, `multipleOf` on decimals as written), equality whatever the members'
//! order, and uniqueness in linear time.

use std::cmp::Ordering;

use serde_json::{Number, Value};

/// JSON equality: numbers by value (`1` equals `1.0`), objects whatever their order.
pub(super) fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => compare(x, y) == Some(Ordering::Equal),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| equal(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(name, a)| y.get(name).is_some_and(|b| equal(a, b)))
        }
        _ => a == b,
    }
}

/// Whether no two items are equal: pairwise for a few, by a canonical text of each for more
/// (a client's array must not cost the square of its length).
pub(super) fn unique(items: &[Value]) -> bool {
    if items.len() <= 16 {
        return items
            .iter()
            .enumerate()
            .all(|(i, a)| items[i + 1..].iter().all(|b| !equal(a, b)));
    }
    let mut seen = std::collections::HashSet::with_capacity(items.len());
    items.iter().all(|item| {
        let mut text = String::new();
        canonical(item, &mut text);
        seen.insert(text)
    })
}

/// A text equal for values [`equal`] holds equal: numbers by value, members sorted.
fn canonical(value: &Value, out: &mut String) {
    use std::fmt::Write;
    match value {
        Value::Number(n) => match integer(n) {
            Some(i) => {
                let _ = write!(out, "{i}");
            }
            None => match n.as_f64() {
                Some(f) if f.fract() == 0.0 && f.abs() < 1e38 => {
                    let _ = write!(out, "{}", f as i128);
                }
                Some(f) => {
                    let _ = write!(out, "{f:e}");
                }
                None => out.push_str(&n.to_string()),
            },
        },
        Value::Array(items) => {
            out.push('[');
            for item in items {
                canonical(item, out);
                out.push(',');
            }
            out.push(']');
        }
        Value::Object(members) => {
            let mut sorted: Vec<(&String, &Value)> = members.iter().collect();
            sorted.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (name, member) in sorted {
                out.push_str(&Value::String(name.clone()).to_string());
                out.push(':');
                canonical(member, out);
                out.push(',');
            }
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

fn integer(n: &Number) -> Option<i128> {
    n.as_i64()
        .map(i128::from)
        .or_else(|| n.as_u64().map(i128::from))
}

/// Numbers by value, exactly (an integer beside a float too); `None` for a pair that does not
/// order, which fails every comparison.
pub(super) fn compare(a: &Number, b: &Number) -> Option<Ordering> {
    match (integer(a), integer(b)) {
        (Some(x), Some(y)) => Some(x.cmp(&y)),
        (Some(x), None) => exact(x, b.as_f64()?),
        (None, Some(y)) => exact(y, a.as_f64()?).map(Ordering::reverse),
        (None, None) => a.as_f64()?.partial_cmp(&b.as_f64()?),
    }
}

/// An integer against a float, without rounding either.
fn exact(i: i128, f: f64) -> Option<Ordering> {
    // 2^127: every i128 lies strictly between its negation and it.
    const LIMIT: f64 = 1.7014118346046923e38;
    if f.is_nan() {
        return None;
    }
    if f >= LIMIT {
        return Some(Ordering::Less);
    }
    if f < -LIMIT {
        return Some(Ordering::Greater);
    }
    let whole = f.trunc();
    // `whole` is an integer below 2^127 in magnitude: the cast is exact.
    match i.cmp(&(whole as i128)) {
        Ordering::Equal if f > whole => Some(Ordering::Less),
        Ordering::Equal if f < whole => Some(Ordering::Greater),
        order => Some(order),
    }
}

/// Whether `n` divided by `of` is an integer, reading both as the decimals they are
/// written as (`0.3` is a multiple of `0.1`).
pub(super) fn multiple(n: &Number, of: &Number) -> bool {
    if let (Some(x), Some(y)) = (integer(n), integer(of)) {
        return y != 0 && x % y == 0;
    }
    if let (Some((xm, xe)), Some((ym, ye))) = (decimal(n), decimal(of)) {
        if ym == 0 {
            return false;
        }
        let e = xe.min(ye);
        let scale = |m: i128, by: i32| {
            u32::try_from(by)
                .ok()
                .and_then(|by| 10i128.checked_pow(by))
                .and_then(|p| m.checked_mul(p))
        };
        if let (Some(x), Some(y)) = (scale(xm, xe - e), scale(ym, ye - e)) {
            return x % y == 0;
        }
    }
    // Too many digits for the decimals: the floats' exact remainder.
    match (n.as_f64(), of.as_f64()) {
        (Some(x), Some(y)) => y != 0.0 && (x % y) == 0.0,
        _ => false,
    }
}

/// A number as `mantissa * 10^exponent`, from its shortest decimal form.
fn decimal(n: &Number) -> Option<(i128, i32)> {
    let text = n.to_string();
    let (digits, exponent) = match text.split_once(['e', 'E']) {
        Some((digits, exponent)) => (digits, exponent.parse::<i32>().ok()?),
        None => (text.as_str(), 0),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    let mantissa: i128 = format!("{whole}{fraction}").parse().ok()?;
    let places = i32::try_from(fraction.len()).ok()?;
    Some((mantissa, exponent.checked_sub(places)?))
}
