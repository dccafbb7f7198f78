//! Two abilities serving one resource URI: building the registry fails and names both.

use abilities::{Registry, RegistryError, ability};

/// The readme.
#[ability(semantic = "READ", resource = "docs://readme")]
fn readme() -> String {
    "one".into()
}

/// The readme again.
#[ability(semantic = "READ", resource = "docs://readme")]
fn readme_again() -> String {
    "two".into()
}

#[test]
fn duplicate_resource_uris_fail_naming_both_definitions() {
    let err = Registry::collect().err();
    let Some(RegistryError::DuplicateResource { uri, .. }) = &err else {
        panic!("expected a duplicate resource error, got {err:?}");
    };
    assert_eq!(uri, "docs://readme");
    assert_eq!(
        err.map(|e| e.to_string()).unwrap_or_default(),
        "abilities `readme` (tests/duplicate_resources.rs:7) and `readme_again` (tests/duplicate_resources.rs:13) both serve the resource `docs://readme`"
    );
    assert_eq!(readme() + &readme_again(), "onetwo");
}
