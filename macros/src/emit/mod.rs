//! What `#[ability]` emits for a checked function, one part per file: the input (its schema
//! and decoding), the call, the output's schema, and the definition that registers them.

mod call;
mod definition;
mod input;
mod output;

pub(crate) use call::call;
pub(crate) use definition::{Definition, definition};
pub(crate) use input::{Input, input};
pub(crate) use output::{not_a_result, output_schema};

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Ident, LitStr};

/// A parameter's name as the input names it (a raw identifier without its `r#`).
pub(crate) fn ident_name(ident: &Ident) -> String {
    let name = ident.to_string();
    name.strip_prefix("r#").unwrap_or(&name).to_owned()
}

/// `Some("text")` or `None`.
fn option_str(lit: Option<&LitStr>) -> TokenStream {
    match lit {
        Some(lit) => quote!(::core::option::Option::Some(#lit)),
        None => quote!(::core::option::Option::None),
    }
}
