//! The registry: every `#[ability]` of the program, collected once, with schemas derived and
//! validators compiled at build time so calls do no schema work.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::RegistryError;
use crate::ability::{Ability, AbilityDef, AbilityKind};

/// Every ability of the program, sorted by name, ready to list and call.
///
/// ```standalone_crate
/// use abilities::{Context, Registry, ability};
/// use serde_json::json;
///
/// /// Add two numbers.
/// #[ability(semantic = "READ")]
/// fn add(a: i64, b: i64) -> i64 {
///     a + b
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let registry = Registry::collect().unwrap();
/// let out = registry.call(Context::new(), "add", json!({"a": 2, "b": 40})).await.unwrap();
/// assert_eq!(out, json!({"result": 42}));
/// # });
/// ```
#[derive(Clone)]
pub struct Registry {
    abilities: Vec<Arc<Ability>>,
    index: HashMap<String, usize>,
}

impl Registry {
    /// Build the registry from every ability linked into the program.
    ///
    /// Fails on duplicate ability names, tool-name collisions and schemas that do not compile,
    /// naming the definitions involved by `file:line`.
    pub fn collect() -> Result<Self, RegistryError> {
        Self::from_defs(inventory::iter::<AbilityDef>)
    }

    /// Every ability defined in the module `path` or below it (`my_app::posts`), to serve a
    /// part of a program. Fails like [`collect`](Self::collect).
    pub fn collect_in(path: &str) -> Result<Self, RegistryError> {
        Self::from_defs(inventory::iter::<AbilityDef>.into_iter().filter(|def| {
            def.rust_path
                .strip_prefix(path)
                .is_some_and(|rest| rest.starts_with("::"))
        }))
    }

    /// Build a registry from chosen definitions (tests, or serving a subset).
    #[doc(hidden)]
    pub fn from_defs(
        defs: impl IntoIterator<Item = &'static AbilityDef>,
    ) -> Result<Self, RegistryError> {
        let abilities = defs
            .into_iter()
            .map(|def| Ability::from_def(def).map(Arc::new))
            .collect::<Result<Vec<_>, _>>()?;
        Self::new(abilities)
    }

    /// A registry of these abilities (built with [`Ability::builder`], say). Fails like
    /// [`collect`](Self::collect).
    pub fn from_abilities(
        abilities: impl IntoIterator<Item = Ability>,
    ) -> Result<Self, RegistryError> {
        Self::new(abilities.into_iter().map(Arc::new).collect())
    }

    /// This registry with `ability` added. Fails like [`collect`](Self::collect).
    pub fn with(&self, ability: Ability) -> Result<Self, RegistryError> {
        let mut abilities = self.abilities.clone();
        abilities.push(Arc::new(ability));
        Self::new(abilities)
    }

    /// The abilities of this registry and of `other`, to serve parts of a program together.
    /// Fails like [`collect`](Self::collect) (an ability in both is a duplicate).
    ///
    /// ```standalone_crate
    /// use abilities::Registry;
    ///
    /// mod posts {
    ///     /// Count the posts.
    ///     #[abilities::ability(semantic = "READ")]
    ///     pub fn count_posts() -> u32 { 3 }
    /// }
    /// mod users {
    ///     /// Count the users.
    ///     #[abilities::ability(semantic = "READ")]
    ///     pub fn count_users() -> u32 { 2 }
    /// }
    ///
    /// let here = module_path!();
    /// let posts = Registry::collect_in(&format!("{here}::posts")).unwrap();
    /// let users = Registry::collect_in(&format!("{here}::users")).unwrap();
    /// assert_eq!(posts.merged(&users).unwrap().len(), 2);
    /// assert!(posts.merged(&posts).is_err());
    /// ```
    pub fn merged(&self, other: &Registry) -> Result<Self, RegistryError> {
        let mut abilities = self.abilities.clone();
        abilities.extend(other.abilities.iter().cloned());
        Self::new(abilities)
    }

    /// This registry with `extra` added.
    pub(crate) fn extended(self, extra: Vec<Ability>) -> Result<Self, RegistryError> {
        if extra.is_empty() {
            return Ok(self);
        }
        let mut abilities = self.abilities;
        abilities.extend(extra.into_iter().map(Arc::new));
        Self::new(abilities)
    }

    /// This registry without the ability named `name` (ability or tool name), and the
    /// ability removed; `None` when there is none of that name.
    pub fn without(&self, name: &str) -> Option<(Self, Arc<Ability>)> {
        let &slot = self.index.get(name)?;
        let mut abilities = self.abilities.clone();
        let removed = abilities.remove(slot);
        // Removing an ability cannot create a clash.
        let registry = Self::new(abilities).ok()?;
        Some((registry, removed))
    }

    /// Sort, then reject duplicate names, tool-name clashes and shared resource URIs.
    fn new(mut abilities: Vec<Arc<Ability>>) -> Result<Self, RegistryError> {
        abilities.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
        let mut index: HashMap<String, usize> = HashMap::with_capacity(abilities.len() * 2);
        let mut uris: HashMap<&str, usize> = HashMap::new();
        for (slot, ability) in abilities.iter().enumerate() {
            if slot > 0 && abilities[slot - 1].name() == ability.name() {
                return Err(RegistryError::DuplicateAbility {
                    name: ability.name().to_owned(),
                    first: abilities[slot - 1].location(),
                    second: ability.location(),
                });
            }
            for key in [ability.tool_name(), ability.name()] {
                if let Some(&other) = index.get(key) {
                    let other = &abilities[other];
                    return Err(RegistryError::ToolNameCollision {
                        tool: ability.tool_name().to_owned(),
                        first_name: other.name().to_owned(),
                        first: other.location(),
                        second_name: ability.name().to_owned(),
                        second: ability.location(),
                    });
                }
                index.insert(key.to_owned(), slot);
                if ability.tool_name() == ability.name() {
                    break;
                }
            }
            if let AbilityKind::Resource { uri, .. } = ability.kind() {
                if let Some(&other) = uris.get(uri.as_ref()) {
                    let other = &abilities[other];
                    return Err(RegistryError::DuplicateResource {
                        uri: uri.to_string(),
                        first: format!("`{}` ({})", other.name(), other.location()),
                        second: format!("`{}` ({})", ability.name(), ability.location()),
                    });
                }
                uris.insert(uri, slot);
            }
        }
        Ok(Self { abilities, index })
    }

    /// The ability with this ability name (`my-plugin/count-posts`) or tool name
    /// (`my-plugin-count-posts`). The two never clash: a clash is a build error.
    pub fn get(&self, name: &str) -> Option<&Ability> {
        self.shared(name).map(|a| &**a)
    }

    /// The ability named `name`, shared.
    pub(crate) fn shared(&self, name: &str) -> Option<&Arc<Ability>> {
        self.index.get(name).map(|&i| &self.abilities[i])
    }

    /// The ability at `index` in name order.
    pub(crate) fn at(&self, index: usize) -> Option<&Arc<Ability>> {
        self.abilities.get(index)
    }

    /// The ability at `index`, shared (for work that outlives the request).
    pub(crate) fn shared_at(&self, index: usize) -> Option<Arc<Ability>> {
        self.abilities.get(index).cloned()
    }

    /// All abilities, sorted by name.
    pub fn iter(&self) -> Iter<'_> {
        Iter(self.abilities.iter())
    }

    /// How many abilities there are.
    pub fn len(&self) -> usize {
        self.abilities.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.abilities.is_empty()
    }
}

impl<'a> IntoIterator for &'a Registry {
    type Item = &'a Ability;
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// The abilities of a [`Registry`], in name order.
#[derive(Clone, Debug)]
pub struct Iter<'a>(std::slice::Iter<'a, Arc<Ability>>);

impl<'a> Iterator for Iter<'a> {
    type Item = &'a Ability;
    fn next(&mut self) -> Option<&'a Ability> {
        self.0.next().map(|a| &**a)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0.next_back().map(|a| &**a)
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.abilities.iter().map(|a| a.name()))
            .finish()
    }
}
