//! Expand `#[ability]`: parse and check everything (every mistake reported in one compile),
//! then emit the function as written plus one `const _` block holding the input's support,
//! the entry point and the `inventory::submit!` of its definition (the parts in `emit`).

use abilities_core::Semantic;
use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::ItemFn;

use crate::attr::{AbilityArgs, Errors, Written, parse_ability_args};
use crate::emit::{self, Definition, Input};
use crate::sig::{Signature, analyse};
use crate::{check, doc, fallback};

pub(crate) fn ability(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let mut item: ItemFn = match syn::parse2(item.clone()) {
        Ok(item) => item,
        Err(_) => {
            let error = syn::Error::new(
                item_keyword_span(&item),
                "`#[ability]` goes on a free `fn` or `async fn`",
            );
            let error = error.to_compile_error();
            return quote! { #item #error };
        }
    };
    let args = parse_ability_args(args, &mut errors);
    let method = item.sig.receiver().is_some();
    if !method && crate::place::is_associated(&item.sig.ident) {
        errors.spanned(
            &item.sig.ident,
            format!(
                "`#[ability]` goes on free functions, and `{}` is an associated function: move it out of the `impl` block; the data `self` would hold reaches an ability as `State<T>` (give the server `.state(..)`)",
                item.sig.ident
            ),
        );
    }
    let sig = analyse(&mut item, &mut errors);
    check::check(&args, &sig, &item, &mut errors);
    let description = args
        .description
        .as_ref()
        .map(|d| quote!(#d))
        .or_else(|| doc::description(&item.attrs));
    if description.is_none() {
        errors.spanned(
            &item.sig.ident,
            format!(
                "ability `{}` needs a description: add a `///` doc comment or `description = \"...\"`",
                item.sig.ident
            ),
        );
    }
    match (errors.into_result(), description, args.semantic) {
        (Ok(()), Some(description), Some(semantic)) => {
            generate(&args, semantic, &sig, &item, &description)
        }
        (Err(error), ..) => fallback::emit(&item, error),
        // Each is reported above; never emitted with a default in its place.
        (Ok(()), None, _) => fallback::emit(
            &item,
            syn::Error::new(Span::call_site(), "missing description"),
        ),
        (Ok(()), Some(_), None) => fallback::emit(
            &item,
            syn::Error::new(Span::call_site(), "missing semantic"),
        ),
    }
}

fn generate(
    args: &AbilityArgs,
    semantic: Written<Semantic>,
    sig: &Signature,
    item: &ItemFn,
    description: &TokenStream,
) -> TokenStream {
    let p = match &args.krate {
        Some(krate) => quote!(#krate::__private),
        None => quote!(::abilities::__private),
    };
    let fn_ident = &item.sig.ident;
    let fn_name = emit::ident_name(fn_ident);
    let Input {
        def: input,
        decode,
        support,
        asserts,
        requires,
    } = emit::input(&p, args, sig, &fn_name);
    let call = emit::call(&p, sig);
    let output = emit::output_schema(&p, sig);
    let not_a_result = emit::not_a_result(&p, sig);
    let definition = emit::definition(&Definition {
        p: &p,
        args,
        semantic,
        item,
        fn_name: &fn_name,
        description,
        input: &input,
        requires: &requires,
        output: &output,
    });
    quote! {
        #item

        #[doc(hidden)]
        #[allow(non_snake_case, non_camel_case_types, deprecated)]
        const _: () = {
            #support
            #asserts
            #not_a_result

            fn __ability_call(
                __ability_ctx: #p::Context,
                __ability_args: #p::serde_json::Value,
            ) -> #p::CallFuture {
                // The function, bound before its parameters, which may share its name.
                let __ability_fn = #fn_ident;
                ::std::boxed::Box::pin(async move {
                    #decode
                    #call
                })
            }

            #p::inventory::submit! { #definition }
        };
    }
}

/// The span of an item's keyword (`struct`, `impl`, ...), past its attributes and visibility.
fn item_keyword_span(item: &TokenStream) -> Span {
    let mut tokens = item.clone().into_iter().peekable();
    while let Some(token) = tokens.next() {
        match &token {
            proc_macro2::TokenTree::Punct(p) if p.as_char() == '#' => {
                tokens.next();
            }
            proc_macro2::TokenTree::Ident(ident) if ident == "pub" => {
                if let Some(proc_macro2::TokenTree::Group(_)) = tokens.peek() {
                    tokens.next();
                }
            }
            other => return other.span(),
        }
    }
    Span::call_site()
}
