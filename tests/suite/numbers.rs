//! Numbers at JSON's edges: an integral number written as a float (`1.0`, `1e3`, what
//! Python's `json` writes for a float) is an integer wherever the schema says `integer`,
//! and a result JSON cannot carry (NaN, an infinity) fails the call instead of reaching the
//! client as `null`.

#![allow(
    clippy::expect_used,
    reason = "a broken fixture should fail the test loudly"
)]

use crate::support::{Lines, tool_error};
use abilities::{AbilityError, Server, ability};
use serde::Serialize;
use serde_json::{Value, json};

/// Divide one number by another.
#[ability(semantic = "READ")]
fn divide(dividend: f64, divisor: f64) -> Result<f64, AbilityError> {
    Ok(dividend / divisor)
}

#[derive(Serialize, schemars::JsonSchema)]
struct Stats {
    count: u64,
    mean: Option<f64>,
}

/// The mean of some numbers.
#[ability(semantic = "READ")]
fn mean(values: Vec<f64>) -> Stats {
    let count = values.len() as u64;
    #[allow(clippy::cast_precision_loss, reason = "a test's counts are small")]
    let mean = Some(values.iter().sum::<f64>() / count as f64);
    Stats { count, mean }
}

/// Echo a page request.
#[ability(semantic = "READ")]
fn page(id: i64, limit: Option<u32>, delay_ms: Option<u64>, ratio: Option<f64>) -> Value {
    json!({"id": id, "limit": limit, "delay_ms": delay_ms, "ratio": ratio})
}

/// An integer, whole.
#[ability(semantic = "READ", flatten)]
fn whole(n: u8) -> u8 {
    n
}

fn server() -> Server {
    builder!().build().expect("valid")
}

#[tokio::test]
async fn a_non_finite_result_is_an_error_never_a_silent_null() {
    let mut lines = Lines::initialized(&server()).await;
    let overflow = lines
        .call(1, "divide", json!({"dividend": 1e308, "divisor": 1e-308}))
        .await;
    assert_eq!(overflow["isError"], true, "{overflow}");
    assert!(overflow.get("structuredContent").is_none(), "{overflow}");
    let error = tool_error(&overflow);
    assert_eq!(error["code"], "EXECUTION_FAILED", "{error}");
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("NaN or an infinity")),
        "{error}"
    );
    // NaN deep inside a structure names its place.
    let empty = lines.call(2, "mean", json!({"values": []})).await;
    assert_eq!(tool_error(&empty)["details"]["pointer"], "/mean", "{empty}");
    // Finite results, and a null that means None, are as ever.
    let fine = lines
        .call(3, "divide", json!({"dividend": 1, "divisor": 4}))
        .await;
    assert_eq!(fine["structuredContent"], json!({"result": 0.25}));
    let mean = lines.call(4, "mean", json!({"values": [1, 2]})).await;
    assert_eq!(mean["structuredContent"], json!({"count": 2, "mean": 1.5}));
}

#[tokio::test]
async fn integral_floats_are_integers_where_the_schema_says_integer() {
    let mut lines = Lines::initialized(&server()).await;
    let read = lines
        .call(
            1,
            "page",
            json!({"id": 1.0, "limit": 10.0, "delay_ms": 1e3, "ratio": 2.0}),
        )
        .await;
    assert_eq!(read["isError"], false, "{read}");
    assert_eq!(
        read["structuredContent"],
        json!({"result": {"id": 1, "limit": 10, "delay_ms": 1000, "ratio": 2.0}})
    );
    let flat = lines.call(2, "whole", json!({"input": 7.0})).await;
    assert_eq!(flat["structuredContent"], json!({"result": 7}), "{flat}");
    // A fraction is refused by validation, with its violations.
    let fraction = lines.call(3, "page", json!({"id": 1.5})).await;
    let error = tool_error(&fraction);
    assert_eq!(error["code"], "VALIDATION_INVALID_TYPE", "{error}");
    assert_eq!(
        error["details"]["violations"][0]["pointer"], "/id",
        "{error}"
    );
    // What the schema lets through and the type does not take is refused with a violation
    // too: 1e20 is an integer, but no i64.
    let out_of_range = lines.call(4, "page", json!({"id": 1e20})).await;
    let error = tool_error(&out_of_range);
    assert_eq!(error["code"], "VALIDATION_INVALID_TYPE", "{error}");
    let violations = error["details"]["violations"]
        .as_array()
        .expect("violations");
    assert_eq!(violations.len(), 1, "{error}");
    assert_eq!(violations[0]["code"], "VALIDATION_INVALID_TYPE");
    assert_eq!(violations[0]["pointer"], "/id", "{error}");
}
