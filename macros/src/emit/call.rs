//! The call: borrowed parameters taken from the context, the function called (and awaited),
//! and what it returned turned into the ability's output or error.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use crate::sig::{Output, ParamKind, Signature};

/// The body of the entry point after the input is decoded: `__ability_ctx` and the decoded
/// parameters in scope, a `Result<Output, AbilityError>` out.
pub(crate) fn call(p: &TokenStream, sig: &Signature) -> TokenStream {
    let call_args = sig.params.iter().map(|param| {
        let (ident, ty) = (&param.ident, &param.ty);
        match (&param.kind, ty) {
            (ParamKind::Borrowed, syn::Type::Reference(reference)) => {
                let elem = &reference.elem;
                quote_spanned!(elem.span()=> <#elem as #p::FromContextRef>::from_context_ref(&__ability_ctx))
            }
            _ => quote!(#ident),
        }
    });
    let await_ = sig.is_async.then(|| quote!(.await));
    let finish = match &sig.output {
        Output::Unit => quote! {
            let () = __ability_out;
            ::core::result::Result::Ok(<#p::Output as ::core::default::Default>::default())
        },
        Output::Plain(ty) => {
            quote_spanned!(ty.span()=> <#ty as #p::AbilityOutput>::into_output(__ability_out))
        }
        Output::Result { ok, err_span } => {
            let ok_arm = match ok {
                Some(ty) => quote_spanned!(ty.span()=>
                    ::core::result::Result::Ok(__ability_value) => <#ty as #p::AbilityOutput>::into_output(__ability_value)
                ),
                None => quote!(
                    ::core::result::Result::Ok(()) => ::core::result::Result::Ok(
                        <#p::Output as ::core::default::Default>::default()
                    )
                ),
            };
            let into_error = quote_spanned!(*err_span=>
                #p::IntoAbilityError::into_ability_error(__ability_error)
            );
            quote! {
                match __ability_out {
                    #ok_arm,
                    ::core::result::Result::Err(__ability_error) => ::core::result::Result::Err(#into_error),
                }
            }
        }
    };
    // Called through the binding made before the parameters are (`fn find(find: Find)`: the
    // parameter `find` would shadow the function).
    quote! {
        let __ability_out = __ability_fn(#(#call_args),*) #await_;
        #finish
    }
}
