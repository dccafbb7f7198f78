//! The definition that registers the ability: its name, description and kinds as checked,
//! pointing to the input, call and output emitted beside it.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::{Ident, ItemFn, LitBool, LitStr};

use super::option_str;
use crate::attr::{AbilityArgs, Written};

/// What the definition points to, emitted by the other parts.
pub(crate) struct Definition<'a> {
    pub(crate) p: &'a TokenStream,
    pub(crate) args: &'a AbilityArgs,
    /// The semantic, required (a missing one is a compile error before this).
    pub(crate) semantic: Written<abilities_core::Semantic>,
    pub(crate) item: &'a ItemFn,
    pub(crate) fn_name: &'a str,
    pub(crate) description: &'a TokenStream,
    pub(crate) input: &'a TokenStream,
    pub(crate) requires: &'a TokenStream,
    pub(crate) output: &'a TokenStream,
}

/// The `AbilityDef` expression (the entry point is `__ability_call`).
pub(crate) fn definition(def: &Definition<'_>) -> TokenStream {
    let Definition {
        p,
        args,
        semantic,
        item,
        fn_name,
        description,
        input,
        requires,
        output,
    } = def;
    let fn_ident = &item.sig.ident;
    let name = args
        .name
        .as_ref()
        .map_or_else(|| LitStr::new(fn_name, fn_ident.span()), Clone::clone);
    let semantic = variant(semantic);
    let title = option_str(args.title.as_ref());
    let category = option_str(args.category.as_ref());
    let permission = option_str(args.permission.as_ref());
    let public = bool_or(args.public.as_ref(), true);
    let site = bool_or(args.site.as_ref(), true);
    let read_only = option_bool(args.read_only.as_ref());
    let destructive = option_bool(args.destructive.as_ref());
    let idempotent = option_bool(args.idempotent.as_ref());
    let open_world = option_bool(args.open_world.as_ref());
    let kind = match (&args.resource, args.prompt) {
        (Some(uri), _) => {
            let mime_type = match &args.mime_type {
                Some(lit) => quote!(::core::option::Option::Some(#p::Cow::Borrowed(#lit))),
                None => quote!(::core::option::Option::None),
            };
            quote!(#p::AbilityKind::Resource { uri: #p::Cow::Borrowed(#uri), mime_type: #mime_type })
        }
        (None, Some(_)) => quote!(#p::AbilityKind::Prompt),
        (None, None) => quote!(#p::AbilityKind::Tool),
    };
    let family = option_str(args.family.as_ref());
    let meta = option_str(args.meta.as_ref());
    let danger = match &args.danger {
        Some(danger) => {
            let danger = variant(danger);
            quote!(::core::option::Option::Some(#p::Danger::#danger))
        }
        None => quote!(::core::option::Option::None),
    };
    let confirm = match &args.confirm {
        Some(confirm) => quote!(::core::option::Option::Some(#confirm)),
        None => quote!(::core::option::Option::None),
    };
    // Not written: the default, as the kind defines it.
    let task = match &args.task {
        Some(task) => {
            let task = variant(task);
            quote!(#p::TaskSupport::#task)
        }
        None => quote!(#p::TaskSupport::DEFAULT),
    };
    let rate = match &args.rate {
        Some(Written {
            value: (calls, period),
            ..
        }) => quote!(::core::option::Option::Some((#calls, #period))),
        None => quote!(::core::option::Option::None),
    };
    let deprecated = match deprecation(&item.attrs) {
        Some(note) => quote!(::core::option::Option::Some(#note)),
        None => quote!(::core::option::Option::None),
    };
    let line = quote_spanned!(fn_ident.span()=> ::core::line!());
    let file = quote_spanned!(fn_ident.span()=> ::core::file!());
    quote! {
        #p::AbilityDef {
            name: #name,
            title: #title,
            description: #description,
            category: #category,
            semantic: #p::Semantic::#semantic,
            permission: #permission,
            public: #public,
            site: #site,
            annotations: #p::Annotations {
                read_only_hint: #read_only,
                destructive_hint: #destructive,
                idempotent_hint: #idempotent,
                open_world_hint: #open_world,
            },
            kind: #kind,
            family: #family,
            meta: #meta,
            danger: #danger,
            confirm: #confirm,
            task: #task,
            rate: #rate,
            deprecated: #deprecated,
            input: #input,
            requires: #requires,
            output: #output,
            call: __ability_call,
            rust_path: ::core::concat!(::core::module_path!(), "::", #fn_name),
            file: #file,
            line: #line,
        }
    }
}

/// The Rust variant of a kind read from the attribute (its `Debug` form is its variant's
/// name), spanned at the literal that spelled it.
fn variant<T: std::fmt::Debug>(written: &Written<T>) -> Ident {
    Ident::new(&format!("{:?}", written.value), written.span)
}

/// The note of a `#[deprecated]` on the function (`""` when it gives none): `#[deprecated]`,
/// `#[deprecated = "..."]` or `#[deprecated(note = "...", since = "...")]`.
fn deprecation(attrs: &[syn::Attribute]) -> Option<String> {
    let attr = attrs.iter().find(|a| a.path().is_ident("deprecated"))?;
    match &attr.meta {
        syn::Meta::Path(_) => Some(String::new()),
        syn::Meta::NameValue(nv) => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(note),
                ..
            }) => Some(note.value()),
            _ => Some(String::new()),
        },
        syn::Meta::List(_) => {
            let mut note = String::new();
            // rustc checks the attribute's form itself; read what it accepts.
            let _ = attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("note") {
                    note = meta.value()?.parse::<syn::LitStr>()?.value();
                } else if meta.input.peek(syn::Token![=]) {
                    let _ = meta.value()?.parse::<syn::Expr>()?;
                }
                Ok(())
            });
            Some(note)
        }
    }
}

fn option_bool(lit: Option<&LitBool>) -> TokenStream {
    match lit {
        Some(lit) => quote!(::core::option::Option::Some(#lit)),
        None => quote!(::core::option::Option::None),
    }
}

fn bool_or(lit: Option<&LitBool>, default: bool) -> TokenStream {
    match lit {
        Some(lit) => quote!(#lit),
        None => quote!(#default),
    }
}
