//! Registries that cannot be served: two abilities on one resource URI, and ability names
//! that give one MCP-AQL operation name. Each failure names the definitions involved.

use abilities::{Registry, ability, registry::RegistryError};

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
    let err = Registry::collect_in(module_path!()).err();
    let Some(RegistryError::DuplicateResource { uri, .. }) = &err else {
        panic!("expected a duplicate resource error, got {err:?}");
    };
    assert_eq!(uri, "docs://readme");
    assert_eq!(
        err.map(|e| e.to_string()).unwrap_or_default(),
        "abilities `readme` (tests/suite/duplicate_resources.rs:8) and `readme_again` (tests/suite/duplicate_resources.rs:14) both serve the resource `docs://readme`"
    );
    assert_eq!(readme() + &readme_again(), "onetwo");
}

/// Two abilities whose names give one MCP-AQL operation name, and one named `introspect`.
mod clash {
    use abilities::ability;

    /// One.
    #[ability(semantic = "READ", name = "posts/list-all")]
    fn first() -> u8 {
        1
    }

    /// Two.
    #[ability(semantic = "READ", name = "posts/list_all")]
    fn second() -> u8 {
        2
    }
}

/// An ability named like the built-in operation.
mod builtin {
    use abilities::ability;

    /// Shadows the built-in.
    #[ability(semantic = "READ")]
    fn introspect() -> u8 {
        3
    }
}

#[test]
fn colliding_operation_names_fail_the_mcp_aql_surface() {
    use abilities::{Server, ServerError, Surface};

    let registry = Registry::collect_in(concat!(module_path!(), "::builtin")).expect("valid");
    // Native tools are fine.
    assert!(Server::builder().registry(registry).build().is_ok());
    let registry = Registry::collect_in(concat!(module_path!(), "::builtin")).expect("valid");
    let error = Server::builder()
        .registry(registry)
        .surface(Surface::aql_single())
        .build()
        .err();
    assert!(
        matches!(&error, Some(ServerError::AqlOperationCollision { operation, .. }) if operation == "introspect"),
        "{error:?}"
    );

    let registry = Registry::collect_in(concat!(module_path!(), "::clash")).expect("valid");
    assert_eq!(registry.len(), 2);
    let server = Server::builder()
        .registry(registry)
        .build()
        .expect("native");
    let error = server.with_surface(Surface::aql_semantic()).err();
    let message = error.map(|e| e.to_string()).unwrap_or_default();
    assert!(
        message.starts_with("MCP-AQL operation `posts_list_all` would be served by `posts/list-all` (tests/suite/duplicate_resources.rs:"),
        "{message}"
    );
}
