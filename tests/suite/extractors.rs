//! Extractors by trait: a user-defined extractor reaches the handler and stays out of the
//! schema, and a server that lacks a `State<T>` an ability takes fails `build()`.

#![allow(
    clippy::expect_used,
    reason = "a broken fixture should fail the test loudly"
)]

use abilities::{AbilityError, Caller, Context, ServerError, State, ability, extract::FromContext};
use serde_json::json;

/// The tenant a caller belongs to: the part of its principal before `@`.
struct Tenant(String);

impl FromContext for Tenant {
    fn from_context(ctx: &Context) -> Result<Self, AbilityError> {
        match ctx.caller().principal().split_once('@') {
            Some((tenant, _)) => Ok(Tenant(tenant.to_owned())),
            None => Err(AbilityError::permission_denied(
                "the caller belongs to no tenant",
            )),
        }
    }
}

/// Settings only this test's server provides.
struct Quota(u32);

/// How many items the caller's tenant may still create.
#[ability(semantic = "READ")]
fn remaining(tenant: Tenant, quota: State<Quota>, used: u32) -> String {
    let Quota(limit) = &*quota;
    format!("{}: {}", tenant.0, limit.saturating_sub(used))
}

#[tokio::test]
async fn a_user_extractor_reaches_the_handler_and_is_no_property() {
    let server = builder!()
        .site(abilities::Site::new("test", "https://example.com"))
        .state(Quota(10))
        .build()
        .expect("the server builds");
    let tool = server
        .tools()
        .into_iter()
        .find(|t| t.name == "remaining")
        .expect("listed");
    assert_eq!(
        serde_json::to_value(&*tool.input_schema).expect("JSON"),
        json!({
            "type": "object",
            "properties": {
                "used": {"type": "integer", "minimum": 0},
                "site_id": {"type": "string", "description": "Optional: the site this call is meant for; a call naming another site is rejected."}
            },
            "required": ["used"]
        })
    );
    let client = server
        .connect_as(Some(Caller::new("acme@ada", ["any"])))
        .await
        .expect("connects");
    let answer = client
        .call("remaining", json!({"used": 3}))
        .await
        .expect("answers");
    assert_eq!(
        answer.structured_content,
        Some(json!({"result": "acme: 7"}))
    );
    // The extractor's own error is the call's error.
    let stranger = server
        .connect_as(Some(Caller::new("ada", ["any"])))
        .await
        .expect("connects");
    let refused = stranger
        .call("remaining", json!({"used": 3}))
        .await
        .expect("answers");
    assert_eq!(refused.is_error, Some(true));
    let text = serde_json::to_value(&refused.content[0]).expect("JSON");
    let error: serde_json::Value =
        serde_json::from_str(text["text"].as_str().expect("text")).expect("JSON");
    assert_eq!(error["code"], "PERMISSION_DENIED");
}

#[test]
fn a_server_without_the_state_an_ability_takes_fails_to_build() {
    let error = builder!()
        .build()
        .err()
        .expect("the Quota state is missing");
    let ServerError::MissingState { ability, at, state } = &error else {
        panic!("unexpected error: {error}");
    };
    assert_eq!(ability, "remaining");
    assert_eq!(
        at,
        &format!("tests/suite/extractors.rs:{}", line_of("fn remaining("))
    );
    assert_eq!(*state, "suite::extractors::Quota");
    assert_eq!(
        error.to_string(),
        format!(
            "ability `remaining` (tests/suite/extractors.rs:{}) takes `State<suite::extractors::Quota>`, but the server has no `suite::extractors::Quota`: add `.state(..)` or `.shared_state(..)` of that type to the builder",
            line_of("fn remaining(")
        )
    );
}

/// The line of this file that starts with `prefix`.
fn line_of(prefix: &str) -> usize {
    include_str!("extractors.rs")
        .lines()
        .position(|l| l.starts_with(prefix))
        .map(|i| i + 1)
        .expect("the line exists")
}
