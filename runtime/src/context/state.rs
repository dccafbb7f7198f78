//! Application state: the map a server or context holds, and the `State<T>` extractor that
//! hands one value of it to an ability.

use std::any::{Any, TypeId, type_name};
use std::collections::HashMap;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use crate::extract::{FromContext, Requirement};
use crate::{AbilityError, Context};

/// Typed application state, keyed by type.
#[derive(Clone, Default)]
pub struct StateMap {
    values: HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
}

impl StateMap {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Store `value`, replacing any earlier value of the same type.
    pub fn insert<T: Send + Sync + 'static>(&mut self, value: T) {
        self.values.insert(TypeId::of::<T>(), Arc::new(value));
    }

    /// Store a value the application already shares, so abilities see the very same one.
    pub fn insert_shared<T: Send + Sync + 'static>(&mut self, value: Arc<T>) {
        self.values.insert(TypeId::of::<T>(), value);
    }

    /// Whether a value of this type was stored.
    pub(crate) fn contains(&self, type_id: TypeId) -> bool {
        self.values.contains_key(&type_id)
    }

    /// The value of type `T`, if one was stored.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        self.values
            .get(&TypeId::of::<T>())
            .cloned()
            .and_then(|v| v.downcast::<T>().ok())
    }
}

impl fmt::Debug for StateMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StateMap")
            .field("len", &self.values.len())
            .finish()
    }
}

/// Hands an ability the application state of type `T` registered on the server (or on the
/// [`Context`] in process). A server built without it fails `build()`, naming the ability and
/// the type; in process, a missing state is an `INTERNAL_ERROR`, never a panic.
///
/// ```standalone_crate
/// use abilities::{Context, Registry, State, ability};
/// use serde_json::json;
///
/// struct Greeting {
///     word: String,
/// }
///
/// /// Say hello.
/// #[ability(semantic = "READ", flatten)]
/// fn hello(greeting: State<Greeting>, name: String) -> String {
///     format!("{} {name}", greeting.word)
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let ctx = Context::new().with_state(Greeting { word: "Hello".into() });
/// let out = Registry::collect().unwrap().call(ctx, "hello", json!({"input": "Ada"})).await;
/// assert_eq!(out.unwrap(), json!({"result": "Hello Ada"}));
/// # });
/// ```
pub struct State<T>(pub Arc<T>);

impl<T> Deref for State<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> Clone for State<T> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

impl<T: fmt::Debug> fmt::Debug for State<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("State").field(&self.0).finish()
    }
}

impl<T: Send + Sync + 'static> FromContext for State<T> {
    fn requirement() -> Option<Requirement> {
        Some(Requirement::state::<T>())
    }

    fn from_context(ctx: &Context) -> Result<Self, AbilityError> {
        ctx.state::<T>().map(State).ok_or_else(|| {
            tracing::error!(
                state = type_name::<T>(),
                "ability asked for state that was never registered"
            );
            AbilityError::internal("the server is missing application state this ability needs")
        })
    }
}
