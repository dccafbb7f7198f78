//! Routing headers of protocol 2026-07-28 (SEP-2243): `Mcp-Method` and `Mcp-Name` must say
//! what the body says, and a parameter declared `#[param(header = "...")]` is mirrored in an
//! `Mcp-Param-*` header that must match it; a mismatch is `-32020` with HTTP 400.

#![allow(
    clippy::expect_used,
    reason = "a broken fixture should fail the test loudly"
)]

use crate::support::{post, serve_http};
use abilities::ability;
use serde_json::{Value, json};

/// Say which region answered.
#[ability(semantic = "READ")]
fn where_am_i(#[param(description = "The region.", header = "Region")] region: String) -> Value {
    json!({"region": region})
}

fn call(region: &str) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "where_am_i", "arguments": {"region": region},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}
        }
    }})
    .to_string()
}

const VERSION: (&str, &str) = ("mcp-protocol-version", "2026-07-28");
const METHOD: (&str, &str) = ("mcp-method", "tools/call");
const NAME: (&str, &str) = ("mcp-name", "where_am_i");

#[tokio::test]
async fn the_parameter_is_declared_for_its_header() {
    let server = builder!().build().expect("valid");
    let tool = server
        .tools()
        .into_iter()
        .find(|t| t.name == "where_am_i")
        .expect("the tool");
    let schema = serde_json::to_value(&tool.input_schema).expect("JSON");
    assert_eq!(schema["properties"]["region"]["x-mcp-header"], "Region");
}

#[tokio::test]
async fn headers_that_match_the_body_are_served() {
    let addr = serve_http(&builder!().build().expect("valid")).await;
    for header in ["eu-west", "=?base64?ZXUtd2VzdA==?="] {
        let response = post(
            addr,
            "/mcp",
            &[VERSION, METHOD, NAME, ("mcp-param-region", header)],
            call("eu-west"),
        )
        .await;
        let message = response.message();
        assert_eq!(response.status, 200, "{message}");
        assert_eq!(
            message["result"]["structuredContent"],
            json!({"result": {"region": "eu-west"}}),
            "{header}: {message}"
        );
    }
}

#[tokio::test]
async fn headers_that_differ_from_the_body_are_minus_32020() {
    let addr = serve_http(&builder!().build().expect("valid")).await;
    let cases: [&[(&str, &str)]; 5] = [
        // The parameter's header says another region.
        &[VERSION, METHOD, NAME, ("mcp-param-region", "us-east")],
        // The parameter's header is missing.
        &[VERSION, METHOD, NAME],
        // Invalid base64.
        &[
            VERSION,
            METHOD,
            NAME,
            ("mcp-param-region", "=?base64?ZXUtd2VzdA?="),
        ],
        // Another method.
        &[
            VERSION,
            ("mcp-method", "tools/list"),
            NAME,
            ("mcp-param-region", "eu-west"),
        ],
        // Another tool.
        &[
            VERSION,
            METHOD,
            ("mcp-name", "other"),
            ("mcp-param-region", "eu-west"),
        ],
    ];
    for headers in cases {
        let response = post(addr, "/mcp", headers, call("eu-west")).await;
        let message = response.message();
        assert_eq!(response.status, 400, "{headers:?}: {message}");
        assert_eq!(message["error"]["code"], -32020, "{headers:?}: {message}");
    }
}
