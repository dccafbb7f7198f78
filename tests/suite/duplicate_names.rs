//! Two abilities with one name: building the registry fails and names both definitions.

use abilities::{Registry, ability, registry::RegistryError};

mod first {
    use super::ability;

    /// The first `echo`.
    #[ability(semantic = "READ", name = "tools/echo")]
    pub(crate) fn echo(text: String) -> String {
        text
    }
}

mod second {
    use super::ability;

    /// The second `echo`.
    #[ability(semantic = "READ", name = "tools/echo")]
    pub(crate) fn echo_again(text: String) -> String {
        text
    }
}

#[test]
fn duplicate_names_fail_naming_both_definitions() {
    let err = Registry::collect_in(module_path!()).err();
    let Some(RegistryError::DuplicateAbility {
        name,
        first,
        second,
    }) = &err
    else {
        panic!("expected a duplicate error, got {err:?}");
    };
    assert_eq!(name, "tools/echo");
    let mut places = [first.as_str(), second.as_str()];
    places.sort_unstable();
    assert_eq!(
        places,
        [
            "tests/suite/duplicate_names.rs:10",
            "tests/suite/duplicate_names.rs:20"
        ]
    );
    let message = err.map(|e| e.to_string()).unwrap_or_default();
    assert_eq!(
        message,
        "duplicate ability name `tools/echo`: defined at tests/suite/duplicate_names.rs:10 and at tests/suite/duplicate_names.rs:20"
    );
    // The functions stay callable as written.
    assert_eq!(
        first::echo("a".into()) + &second::echo_again("b".into()),
        "ab"
    );
}
