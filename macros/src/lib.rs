//! The `#[ability]` attribute of the [`abilities`](https://docs.rs/abilities) crate.
//!
//! Implementation detail: depend on `abilities`, which re-exports this macro and documents it.

mod attr;
mod check;
mod doc;
mod emit;
mod expand;
mod fallback;
mod place;
mod sig;
mod skills;

use proc_macro::TokenStream;

/// Turn a free `fn` or `async fn` into a registered ability. Documented in the `abilities`
/// crate.
#[proc_macro_attribute]
pub fn ability(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::ability(args.into(), item.into()).into()
}

/// Embed every skill under a directory. Documented in the `abilities` crate.
#[proc_macro]
pub fn skills(input: TokenStream) -> TokenStream {
    skills::skills(input.into()).into()
}
