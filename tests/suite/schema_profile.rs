//! Schema profiles: the OpenAI strict profile lists every object closed and every property
//! required (the optional ones nullable), reads `null` as absent where it made a property
//! nullable, keeps enforcing what it leaves out of the listing, and refuses at `build()` a
//! schema strict mode cannot express.

#![allow(
    clippy::expect_used,
    reason = "a broken fixture should fail the test loudly"
)]

use abilities::{Registry, Server, ServerError, Site, Surface, config::SchemaProfile};
use serde_json::{Value, json};

mod posts {
    use abilities::ability;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    /// Who wrote a post.
    #[derive(Deserialize, Serialize, JsonSchema)]
    pub(crate) struct Author {
        /// The author's name.
        #[schemars(length(max = 20))]
        pub(crate) name: String,
        /// Where to write to them.
        pub(crate) email: Option<String>,
    }

    /// List posts.
    #[ability(semantic = "READ")]
    pub(crate) fn list_posts(
        #[param(description = "Words the title contains.")] search: String,
        #[param(default = 10)] limit: u32,
        status: Option<String>,
        author: Option<Author>,
    ) -> Value {
        serde_json::json!({"search": search, "limit": limit, "status": status, "author": author})
    }

    use serde_json::Value;
}

mod maps {
    use abilities::ability;
    use std::collections::HashMap;

    /// Tag posts.
    #[ability(semantic = "UPDATE")]
    pub(crate) fn tag_posts(tags: HashMap<String, String>) -> usize {
        tags.len()
    }
}

fn strict(path: &str, site: bool, surface: Surface) -> Result<Server, ServerError> {
    let mut builder = builder!()
        .registry(Registry::collect_in(path).expect("valid"))
        .schema_profile(SchemaProfile::OpenAiStrict)
        .surface(surface);
    if site {
        builder = builder.site(Site::new("main", "https://example.com"));
    }
    builder.build()
}

fn input_schema(server: &Server, tool: &str) -> Value {
    let tools = server.tools();
    let tool = tools.iter().find(|t| t.name == tool).expect("listed");
    Value::Object((*tool.input_schema).clone())
}

/// Every object in `schema` is closed and requires each property it names.
fn assert_strict_everywhere(schema: &Value, at: &str) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Object(properties)) = map.get("properties") {
                assert_eq!(map.get("additionalProperties"), Some(&json!(false)), "{at}");
                let required: Vec<&str> = map["required"]
                    .as_array()
                    .expect("required")
                    .iter()
                    .filter_map(Value::as_str)
                    .collect();
                let names: Vec<&str> = properties.keys().map(String::as_str).collect();
                assert_eq!(required, names, "{at}");
            }
            for (key, value) in map {
                assert_strict_everywhere(value, &format!("{at}/{key}"));
            }
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .for_each(|(i, v)| assert_strict_everywhere(v, &format!("{at}/{i}"))),
        _ => {}
    }
}

#[test]
fn the_strict_listing_closes_every_object_and_requires_every_property() {
    let server =
        strict(concat!(module_path!(), "::posts"), false, Surface::Native).expect("builds");
    let schema = input_schema(&server, "list_posts");
    assert_eq!(
        schema,
        json!({
            "type": "object",
            "properties": {
                "search": {"type": "string", "description": "Words the title contains."},
                "limit": {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}]},
                "status": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                "author": {"description": "Who wrote a post.", "anyOf": [
                    {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string", "description": "The author's name."},
                            "email": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "Where to write to them."}
                        },
                        "required": ["name", "email"],
                        "additionalProperties": false
                    },
                    {"type": "null"}
                ]}
            },
            "required": ["search", "limit", "status", "author"],
            "additionalProperties": false
        })
    );
    assert_strict_everywhere(&schema, "");
    // The portable listing of the same ability is as it was.
    let portable = builder!()
        .registry(Registry::collect_in(concat!(module_path!(), "::posts")).expect("valid"))
        .build()
        .expect("builds");
    let schema = input_schema(&portable, "list_posts");
    assert_eq!(schema["required"], json!(["search"]));
    assert_eq!(
        schema["properties"]["author"]["properties"]["name"]["maxLength"],
        json!(20),
        "{schema}"
    );
    assert_eq!(schema["properties"]["limit"]["default"], json!(10));
}

#[tokio::test]
async fn null_is_read_as_absent_where_strict_form_made_a_property_nullable() {
    for surface in [Surface::Native, Surface::Standard] {
        let server =
            strict(concat!(module_path!(), "::posts"), true, surface.clone()).expect("builds");
        let schema = input_schema(&server, "list_posts");
        assert_eq!(
            schema["properties"]["site_id"]["anyOf"][1],
            json!({"type": "null"}),
            "{schema}"
        );
        assert_strict_everywhere(&schema, "");
        let client = server.connect().await.expect("connects");
        let answer = client
            .call(
                "list_posts",
                json!({
                    "search": "rust", "limit": null, "status": null, "site_id": null,
                    "author": {"name": "Ada", "email": null}
                }),
            )
            .await
            .expect("answers");
        assert_eq!(answer.is_error, Some(false), "{surface:?}: {answer:?}");
        assert_eq!(
            answer.structured_content,
            Some(
                json!({"result": {"search": "rust", "limit": 10, "status": null,
                "author": {"name": "Ada", "email": null}}})
            ),
            "{surface:?}"
        );
    }
}

#[tokio::test]
async fn what_the_listing_leaves_out_is_still_enforced() {
    let server =
        strict(concat!(module_path!(), "::posts"), false, Surface::Native).expect("builds");
    let client = server.connect().await.expect("connects");
    let answer = client
        .call(
            "list_posts",
            json!({"search": "rust", "limit": null, "status": null,
                "author": {"name": "a name longer than twenty", "email": null}}),
        )
        .await
        .expect("answers");
    assert_eq!(answer.is_error, Some(true));
    let text = answer.content[0]
        .as_text()
        .map(|t| t.text.clone())
        .expect("text");
    let error: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(error["code"], json!("VALIDATION_INVALID_VALUE"), "{error}");
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("'author.name'")),
        "{error}"
    );
}

#[test]
fn a_schema_strict_mode_cannot_express_fails_build_naming_where() {
    let error = strict(concat!(module_path!(), "::maps"), false, Surface::Native)
        .err()
        .expect("a map has no strict form");
    let message = error.to_string();
    assert!(
        message.starts_with("ability `tag_posts` (")
            && message.ends_with(
                "): its input schema at `/properties/tags` admits properties it does not name (a map, or `additionalProperties`), which the OpenAiStrict schema profile cannot express"
            ),
        "{message}"
    );
    // The portable profile serves it.
    let portable = builder!()
        .registry(Registry::collect_in(concat!(module_path!(), "::maps")).expect("valid"))
        .build();
    assert!(portable.is_ok());
}
