//! Rich results: content blocks beside or instead of structured JSON, exact on the wire.

#![allow(
    clippy::expect_used,
    reason = "a broken fixture should fail the test loudly"
)]

use crate::support;

use crate::support::Lines;
use abilities::{Content, Rich, Server, ability, resource::Contents};
use serde_json::json;

/// Every kind of block, no structured part.
#[ability(semantic = "READ")]
fn gallery() -> Contents {
    Contents::new([
        Content::text("a gallery"),
        Content::image([137u8, 80, 78, 71], "image/png"),
        Content::audio(b"RIFF", "audio/wav"),
        Content::resource_text("test://embedded", "text/plain", "embedded text"),
        Content::resource_blob("test://blob", "application/octet-stream", [0u8, 255]),
    ])
    .with(Content::resource_link("test://linked", "linked"))
}

/// A count with a chart.
#[ability(semantic = "READ")]
fn chart() -> Rich<u32> {
    Rich::new(3).with(Content::image([1u8, 2, 3], "image/png"))
}

/// A fallible rich result.
#[ability(semantic = "READ", flatten)]
fn maybe_chart(fail: bool) -> Result<Rich<Vec<u8>>, abilities::AbilityError> {
    if fail {
        return Err(abilities::AbilityError::not_found("no chart"));
    }
    Ok(Rich::new(vec![1, 2]).with(Content::text("two bars")))
}

fn server() -> Server {
    builder!().build().expect("the test abilities are valid")
}

#[tokio::test]
async fn content_only_results_have_no_structured_content_nor_output_schema() {
    let mut lines = Lines::initialized(&server()).await;
    let result = lines.call(2, "gallery", json!({})).await;
    assert_eq!(
        result,
        json!({
            "content": [
                {"type": "text", "text": "a gallery"},
                {"type": "image", "data": "iVBORw==", "mimeType": "image/png"},
                {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
                {"type": "resource", "resource": {"uri": "test://embedded", "mimeType": "text/plain", "text": "embedded text"}},
                {"type": "resource", "resource": {"uri": "test://blob", "mimeType": "application/octet-stream", "blob": "AP8="}},
                {"type": "resource_link", "uri": "test://linked", "name": "linked"}
            ],
            "isError": false
        })
    );
    let list = lines.request(3, "tools/list", json!({})).await;
    let tool = list["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["name"] == "gallery")
        .cloned();
    assert!(tool.expect("gallery").get("outputSchema").is_none());
}

#[tokio::test]
async fn rich_results_put_blocks_after_the_json_text() {
    let mut lines = Lines::initialized(&server()).await;
    assert_eq!(
        lines.call(2, "chart", json!({})).await,
        json!({
            "content": [
                {"type": "text", "text": "{\"result\":3}"},
                {"type": "image", "data": "AQID", "mimeType": "image/png"}
            ],
            "structuredContent": {"result": 3},
            "isError": false
        })
    );
    let list = lines.request(3, "tools/list", json!({})).await;
    let tools = list["result"]["tools"].as_array().expect("tools");
    let chart = tools.iter().find(|t| t["name"] == "chart").expect("chart");
    assert_eq!(
        chart["outputSchema"],
        json!({"type": "object", "properties": {"result": {"type": "integer", "minimum": 0}}, "required": ["result"]})
    );
    let ok = lines.call(4, "maybe_chart", json!({"input": false})).await;
    assert_eq!(ok["structuredContent"], json!({"result": [1, 2]}));
    assert_eq!(
        ok["content"][1],
        json!({"type": "text", "text": "two bars"})
    );
    let failed = lines.call(5, "maybe_chart", json!({"input": true})).await;
    assert_eq!(support::tool_error(&failed)["code"], "NOT_FOUND_RESOURCE");
}

#[tokio::test]
async fn in_process_calls_see_both_parts() {
    let server = server();
    // The registry of the moment: a running server's registry can change.
    let registry = server.registry();
    let chart = registry.get("chart").expect("registered");
    let output = chart
        .call_output(abilities::Context::new(), json!({}))
        .await
        .expect("succeeds");
    assert_eq!(output.structured(), Some(&json!({"result": 3})));
    assert_eq!(
        output.content(),
        Some(&[Content::image([1u8, 2, 3], "image/png")][..])
    );
    let gallery = registry.get("gallery").expect("registered");
    assert_eq!(
        gallery.call(abilities::Context::new(), json!({})).await,
        Ok(json!({}))
    );
}

/// One line of text.
#[ability(semantic = "READ")]
fn motto() -> Contents {
    Contents::new([Content::text("less is more")])
}

#[tokio::test]
async fn mcp_aql_answers_content_blocks_as_data() {
    let server = builder!()
        .surface(abilities::Surface::aql_single())
        .build()
        .expect("valid");
    let mut lines = Lines::initialized(&server).await;
    let mut aql = async |id: u64, operation: &str| {
        let result = lines
            .call(id, "mcp_aql", json!({"operation": operation}))
            .await;
        serde_json::from_str::<serde_json::Value>(
            result["content"][0]["text"].as_str().expect("text"),
        )
        .expect("JSON")
    };
    // One text block is the data itself; several blocks are listed as they are.
    assert_eq!(
        aql(2, "motto").await,
        json!({"success": true, "data": "less is more"})
    );
    let gallery = aql(3, "gallery").await;
    let blocks = gallery["data"]["content"].as_array().expect("the blocks");
    assert_eq!(blocks.len(), 6, "{gallery}");
    assert_eq!(
        blocks[1],
        json!({"type": "image", "data": "iVBORw==", "mimeType": "image/png"})
    );
    assert_eq!(blocks[5]["uri"], "test://linked");
}
