#![doc = include_str!("../README.md")]

/// Turn a free `fn` or `async fn` into a registered ability.
///
/// See the crate documentation for the keys. In short:
///
/// ```standalone_crate
/// use abilities::{AbilityError, Context, ability};
///
/// /// Look up a user's display name.
/// #[ability(semantic = "READ", name = "users/display-name", category = "users")]
/// async fn display_name(ctx: &Context, #[param(description = "The user id.")] id: u64) -> Result<String, AbilityError> {
///     let _ = ctx.request_id();
///     if id == 0 {
///         return Err(AbilityError::not_found("no user 0"));
///     }
///     Ok(format!("user-{id}"))
/// }
///
/// // The function stays callable as written.
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// assert_eq!(display_name(&Context::new(), 7).await.unwrap(), "user-7");
/// # });
/// ```
///
/// Misuse is a compile error:
///
/// ```compile_fail
/// use abilities::ability;
///
/// /// Two values cannot be flattened into one.
/// #[ability(semantic = "READ", flatten)]
/// fn add(a: i64, b: i64) -> i64 {
///     a + b
/// }
/// ```
pub use abilities_macros::ability;
pub use abilities_runtime::*;
