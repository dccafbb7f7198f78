//! What a server shows is what it was given: `get_site_context` and the `site_id` parameter
//! only on a server with a site; the site contract unchanged there.

#![allow(
    clippy::expect_used,
    reason = "a broken fixture should fail the test loudly"
)]

use abilities::{
    Server, Site, Surface, ability,
    aql::{Aql, AqlMode},
};
use serde_json::{Value, json};

/// Count the posts.
#[ability(semantic = "READ")]
fn count_posts(status: String) -> usize {
    status.len()
}

fn serve(site: bool, surface: Surface) -> Server {
    let mut builder = builder!().surface(surface);
    if site {
        builder = builder.site(Site::new("main", "https://example.com"));
    }
    builder.build().expect("builds")
}

fn properties(server: &Server, tool: &str) -> Vec<String> {
    let tools = server.tools();
    let tool = tools.iter().find(|t| t.name == tool).expect("listed");
    tool.input_schema["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn without_a_site_there_is_no_site_context_nor_site_id() {
    let server = serve(false, Surface::Native);
    let names: Vec<String> = server.tools().iter().map(|t| t.name.to_string()).collect();
    assert_eq!(names, ["count_posts"]);
    assert_eq!(properties(&server, "count_posts"), ["status"]);
    let client = server.connect().await.expect("connects");
    let unknown = client.call("get_site_context", json!({})).await;
    assert!(unknown.is_err(), "no such tool: {unknown:?}");
    // A site_id sent anyway is accepted and ignored.
    let counted = client
        .call("count_posts", json!({"status": "draft", "site_id": "any"}))
        .await
        .expect("answers");
    assert_eq!(counted.structured_content, Some(json!({"result": 5})));

    // MCP-AQL lists no `site_id` parameter either.
    let aql = serve(false, Surface::Aql(Aql::new(AqlMode::Single)));
    let client = aql.connect().await.expect("connects");
    let detail = client
        .call(
            "mcp_aql",
            json!({"operation": "introspect", "params": {"query": "operations", "name": "count_posts"}}),
        )
        .await
        .expect("answers");
    let text = detail.content[0]
        .as_text()
        .map(|t| t.text.clone())
        .expect("text");
    let detail: Value = serde_json::from_str(&text).expect("JSON");
    let params: Vec<&str> = detail["data"]["operation"]["parameters"]
        .as_array()
        .expect("parameters")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(params, ["status"], "{detail}");
}

#[tokio::test]
async fn with_a_site_the_contract_is_as_it_was() {
    let server = serve(true, Surface::Native);
    let names: Vec<String> = server.tools().iter().map(|t| t.name.to_string()).collect();
    assert_eq!(names, ["get_site_context", "count_posts"]);
    assert_eq!(properties(&server, "count_posts"), ["status", "site_id"]);
    let client = server.connect().await.expect("connects");
    let context = client
        .call("get_site_context", json!({}))
        .await
        .expect("answers");
    let context = context.structured_content.expect("structured");
    assert_eq!(context["contract_version"], 3);
    assert_eq!(context["site"]["site_id"], "main");
    let other = client
        .call(
            "count_posts",
            json!({"status": "draft", "site_id": "other"}),
        )
        .await
        .expect("answers");
    assert_eq!(other.is_error, Some(true));
    let text = other.content[0]
        .as_text()
        .map(|t| t.text.clone())
        .expect("text");
    assert!(text.contains("SITE_MISMATCH"), "{text}");
}
