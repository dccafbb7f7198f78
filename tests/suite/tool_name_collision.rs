//! Two ability names that map to one tool name: building the registry fails and names both.

use abilities::{Registry, ability, registry::RegistryError};

/// Slash form.
#[ability(semantic = "READ", name = "shop/list")]
fn list_a() -> u8 {
    1
}

/// Dash form.
#[ability(semantic = "READ", name = "shop-list")]
fn list_b() -> u8 {
    2
}

#[test]
fn colliding_tool_names_fail_naming_both_definitions() {
    let err = Registry::collect_in(module_path!()).err();
    let Some(RegistryError::ToolNameCollision {
        tool,
        first_name,
        first,
        second_name,
        second,
    }) = &err
    else {
        panic!("expected a collision, got {err:?}");
    };
    assert_eq!(tool, "shop-list");
    assert_eq!(
        (first_name.as_str(), first.as_str()),
        ("shop-list", "tests/suite/tool_name_collision.rs:13")
    );
    assert_eq!(
        (second_name.as_str(), second.as_str()),
        ("shop/list", "tests/suite/tool_name_collision.rs:7")
    );
    assert_eq!(list_a() + list_b(), 3);
}
