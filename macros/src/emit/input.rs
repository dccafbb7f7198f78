//! The input: none, named parameters, or the one flattened value; its schema, how the call
//! decodes it, and the `const` assertions on what only the parameters' types can tell.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::Ident;
use syn::spanned::Spanned;

use super::{ident_name, option_str};
use crate::attr::AbilityArgs;
use crate::sig::{Param, ParamKind, Signature};

/// The input's parts of the generated code.
pub(crate) struct Input {
    /// The `InputDef` of the definition.
    pub(crate) def: TokenStream,
    /// Statements binding each owned parameter from `__ability_args`.
    pub(crate) decode: TokenStream,
    /// Functions the definition points to (defaults, the flattened schema).
    pub(crate) support: TokenStream,
    /// `const` assertions on the parameters' types.
    pub(crate) asserts: TokenStream,
    /// The requirements of the extractors, as `&[fn() -> Option<Requirement>]`.
    pub(crate) requires: TokenStream,
}

/// The input of `sig`, for the ability `fn_name`.
pub(crate) fn input(p: &TokenStream, args: &AbilityArgs, sig: &Signature, fn_name: &str) -> Input {
    let flatten = args.flatten.is_some();
    let owned: Vec<&Param> = sig.params.iter().filter(|p| p.kind.is_owned()).collect();

    // Whether an owned
    // parameter is a value or an extractor is its type's `Param` impl's call; every use of a
    // user's type is spanned at that type, so a type that is neither is reported there.
    let mut support = TokenStream::new();
    let mut decode = TokenStream::new();
    let mut asserts = TokenStream::new();
    let param_of = |ty: &syn::Type| quote_spanned!(ty.span()=> <#ty as #p::Param<_>>);
    // The same projection as `param_of`: a type that is no parameter is one error, not two.
    let is_value = |ty: &syn::Type| quote_spanned!(ty.span()=> <#ty as #p::Param<_>>::VALUE);
    for param in &owned {
        let ParamKind::Owned(_, Some(attr_span)) = &param.kind else {
            continue;
        };
        let value = is_value(&param.ty);
        let message = format!(
            "`#[param]` describes value parameters, and `{}` is an extractor: extractors have no schema",
            ident_name(&param.ident)
        );
        asserts.extend(
            quote_spanned!(*attr_span=> const _: () = ::core::assert!(#value, "{}", #message);),
        );
    }
    let input_def = if owned.is_empty() {
        quote!(#p::InputDef::None)
    } else if flatten {
        let count: Vec<TokenStream> = owned
            .iter()
            .map(|param| {
                let value = is_value(&param.ty);
                quote!((#value as usize))
            })
            .collect();
        let names: Vec<String> = owned
            .iter()
            .map(|param| format!("`{}`", ident_name(&param.ident)))
            .collect();
        let none = format!(
            "`flatten` takes the function's one value parameter, and every parameter of `{fn_name}` is an extractor: remove `flatten`, or add the value it takes"
        );
        let several = format!(
            "`flatten` takes exactly one value parameter, and `{fn_name}` has more than one among {}: remove `flatten` to take each as a property of the input, or take one struct that holds them",
            names.join(", ")
        );
        let flatten_span = args.flatten.unwrap_or_else(Span::call_site);
        asserts.extend(quote_spanned!(flatten_span=>
            const _: () = ::core::assert!(0 #(+ #count)* != 0, "{}", #none);
            const _: () = ::core::assert!(0 #(+ #count)* <= 1, "{}", #several);
        ));
        // The `#[param]` keys of the flattened value (the assertions above keep them off
        // extractors).
        let described = owned.iter().find_map(|param| match &param.kind {
            ParamKind::Owned(param_args, Some(_)) => Some((*param, &**param_args)),
            _ => None,
        });
        let (default, description, complete) = match described {
            Some((param, param_args)) => {
                let (_, default) = default_fns(
                    p,
                    &param.ident,
                    &param.ty,
                    param_args.default.as_ref(),
                    &mut support,
                );
                (
                    default,
                    option_str(param_args.description.as_ref()),
                    completer(p, param_args.complete.as_ref()),
                )
            }
            None => (
                quote!(::core::option::Option::None),
                quote!(::core::option::Option::None),
                quote!(::core::option::Option::None),
            ),
        };
        let sensitive = owned.iter().any(|param| {
            matches!(&param.kind, ParamKind::Owned(param_args, _) if param_args.sensitive.is_some())
        });
        let candidates = owned.iter().map(|param| {
            let param = param_of(&param.ty);
            quote!(let __ability_schema = match __ability_schema {
                ::core::option::Option::Some(schema) => ::core::option::Option::Some(schema),
                ::core::option::Option::None => #param::flat_schema(),
            };)
        });
        support.extend(quote! {
            fn __ability_flat_schema() -> #p::schemars::Schema {
                let __ability_schema: ::core::option::Option<#p::schemars::Schema> = ::core::option::Option::None;
                #(#candidates)*
                match __ability_schema {
                    ::core::option::Option::Some(schema) => schema,
                    ::core::option::Option::None => ::core::default::Default::default(),
                }
            }
        });
        decode.extend(
            quote!(let mut __ability_input = ::core::option::Option::Some(__ability_args);),
        );
        for param in &owned {
            let (ident, ty) = (&param.ident, &param.ty);
            let param = param_of(ty);
            decode.extend(quote_spanned!(ty.span()=>
                let #ident: #ty = #param::whole(&__ability_ctx, &mut __ability_input)?;
            ));
        }
        quote!(#p::InputDef::Flattened {
            schema: __ability_flat_schema as fn() -> #p::schemars::Schema,
            default: #default,
            description: #description,
            complete: #complete,
            sensitive: #sensitive,
        })
    } else {
        decode.extend(quote!(let mut __ability_args = #p::into_object(__ability_args);));
        let mut properties = Vec::new();
        for param in &owned {
            let (ident, ty) = (&param.ident, &param.ty);
            let ParamKind::Owned(param_args, _) = &param.kind else {
                continue;
            };
            let name = ident_name(ident);
            let (take_default, default) =
                default_fns(p, ident, ty, param_args.default.as_ref(), &mut support);
            let description = option_str(param_args.description.as_ref());
            let complete = completer(p, param_args.complete.as_ref());
            let header = option_str(param_args.header.as_ref());
            let sensitive = param_args.sensitive.is_some();
            let param = param_of(ty);
            properties.push(quote!(#p::PropertyDef {
                name: #name,
                schema: #param::schema as fn(&mut #p::schemars::SchemaGenerator) -> ::core::option::Option<#p::schemars::Schema>,
                description: #description,
                header: #header,
                default: #default,
                complete: #complete,
                sensitive: #sensitive,
            }));
            decode.extend(quote_spanned!(ty.span()=>
                let #ident: #ty = #param::take(&__ability_ctx, &mut __ability_args, #name, #take_default)?;
            ));
        }
        quote!(#p::InputDef::Object { properties: &[#(#properties),*] })
    };
    // A resource's value parameters are its URI's variables; its other parameters extractors.
    if let Some(resource) = &args.resource
        && let Ok(variables) = abilities_core::template_variables(&resource.value())
    {
        for param in &owned {
            let name = ident_name(&param.ident);
            let value = is_value(&param.ty);
            if variables.contains(&name) {
                let message = format!(
                    "the URI template variable `{{{name}}}` names `{name}`, an extractor: it needs a value parameter"
                );
                asserts.extend(quote_spanned!(param.ident.span()=> const _: () = ::core::assert!(#value, "{}", #message);));
            } else {
                let message = format!(
                    "resource parameters come from the URI: add `{{{name}}}` to the resource URI, or remove `{name}`"
                );
                asserts.extend(quote_spanned!(param.ident.span()=> const _: () = ::core::assert!(!#value, "{}", #message);));
            }
        }
    }
    let requires = owned.iter().map(|param| {
        let param = param_of(&param.ty);
        quote!(#param::requirement as fn() -> ::core::option::Option<#p::Requirement>)
    });
    let requires = quote!(&[#(#requires),*]);
    Input {
        def: input_def,
        decode,
        support,
        asserts,
        requires,
    }
}

/// For a parameter with `#[param(default = expr)]`, define `fn() -> T` (the typed default the
/// handler gets) and `fn() -> Value` (the default in the schema and the normalizer); return
/// `Option`s of both as tokens. The expression appears once, so a mistake in it is reported once.
fn default_fns(
    p: &TokenStream,
    ident: &Ident,
    ty: &syn::Type,
    default: Option<&syn::Expr>,
    support: &mut TokenStream,
) -> (TokenStream, TokenStream) {
    let Some(expr) = default else {
        return (
            quote!(::core::option::Option::None),
            quote!(::core::option::Option::None),
        );
    };
    // `value__` and `json__` keep the names of two parameters (`x`, `json_x`) apart.
    let typed = format_ident!("__ability_default_value__{}", ident_name(ident));
    let json = format_ident!("__ability_default_json__{}", ident_name(ident));
    // A string literal for an owned string type (`String`, `Cow<str>`, `PathBuf`...) is
    // converted, so `default = "text"` works as written.
    let body = if is_str_literal(expr) && owns_text(ty) {
        quote_spanned!(expr.span()=> ::core::convert::From::from(#expr))
    } else {
        quote!(#expr)
    };
    support.extend(quote! {
        fn #typed() -> #ty { #body }
        fn #json() -> #p::serde_json::Value { #p::encode_default(#typed()) }
    });
    (
        quote!(::core::option::Option::Some(#typed as fn() -> #ty)),
        quote!(::core::option::Option::Some(#json as fn() -> #p::serde_json::Value)),
    )
}

fn is_str_literal(expr: &syn::Expr) -> bool {
    matches!(
        expr,
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(_),
            ..
        })
    )
}

/// Whether `ty` names a type built from a `&str` (by its last path segment).
fn owns_text(ty: &syn::Type) -> bool {
    let syn::Type::Path(path) = ty else {
        return false;
    };
    path.path.segments.last().is_some_and(|s| {
        matches!(
            s.ident.to_string().as_str(),
            "String" | "Cow" | "PathBuf" | "Arc" | "Rc" | "Box"
        )
    })
}

/// `Some(path as fn(&Context, &str) -> Vec<String>)`, spanned at the path so a function of
/// the wrong shape is reported there.
fn completer(p: &TokenStream, path: Option<&syn::Path>) -> TokenStream {
    match path {
        Some(path) => {
            let cast = quote_spanned!(path.span()=>
                #path as fn(&#p::Context, &str) -> ::std::vec::Vec<::std::string::String>
            );
            quote!(::core::option::Option::Some(#cast))
        }
        None => quote!(::core::option::Option::None),
    }
}
