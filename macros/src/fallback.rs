//! What is emitted when the attribute has errors: the function as written (without the
//! `#[param]` attributes) beside the errors, so one mistake does not cascade into
//! "cannot find function" errors at every call site.

use proc_macro2::TokenStream;
use quote::quote;
use syn::ItemFn;

pub(crate) fn emit(item: &ItemFn, error: syn::Error) -> TokenStream {
    let errors = error.to_compile_error();
    quote! {
        #item
        #errors
    }
}
