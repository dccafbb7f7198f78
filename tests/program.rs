//! Safe defaults: what is not configured grants nothing. A binary of its own: these tests read
//! the whole program's registry (`Registry::collect()`, what `Server::builder()` serves
//! unless told otherwise), which must hold only the abilities defined here.

use abilities::{
    Caller, Context, ErrorCode, Registry, ability,
    aql::{Aql, AqlMode},
};
use serde_json::json;

/// Delete everything.
#[ability(semantic = "DELETE", permission = "posts:delete")]
fn purge() -> u32 {
    7
}

#[tokio::test]
async fn an_unconfigured_context_is_denied_a_scoped_ability() {
    let registry = Registry::collect().expect("the registry builds");
    let denied = registry.call(Context::new(), "purge", json!({})).await;
    let error = denied.expect_err("an anonymous caller holds no scope");
    assert_eq!(error.code(), &ErrorCode::PermissionDenied);
    assert_eq!(
        error.details(),
        Some(&json!({"required_scope": "posts:delete"}))
    );
    let trusted = Context::new().with_caller(Caller::trusted("test"));
    assert_eq!(
        registry.call(trusted, "purge", json!({})).await.ok(),
        Some(json!({"result": 7}))
    );
    let scoped = Context::new().with_caller(Caller::new("editor", ["posts:delete"]));
    assert!(registry.call(scoped, "purge", json!({})).await.is_ok());
}

#[test]
fn default_callers_and_surfaces_equal_their_explicit_forms() {
    assert_eq!(Caller::default(), Caller::anonymous());
    assert!(!Caller::default().has_scope("posts:delete"));
    assert_eq!(Aql::default(), Aql::new(AqlMode::default()));
}

#[test]
fn a_custom_code_that_spells_a_framework_code_is_that_code() {
    use abilities::AbilityError;
    let timeout = AbilityError::new(ErrorCode::Custom("TIMEOUT".into()), "slow");
    assert_eq!(timeout.code(), &ErrorCode::Timeout);
    let own = AbilityError::new(ErrorCode::Custom("QUOTA_SPENT".into()), "spent");
    assert_eq!(own.code(), &ErrorCode::Custom("QUOTA_SPENT".into()));
}
