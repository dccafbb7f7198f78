//! Generate the registration: the function as written, plus one `const _` block holding the
//! defaults, the entry point and the `inventory::submit!`.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, ItemFn, LitBool, LitStr};

use crate::attr::{AbilityArgs, Errors, parse_ability_args};
use crate::sig::{Output, Param, ParamKind, Signature, analyse};
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
    match (errors.into_result(), description) {
        (Ok(()), Some(description)) => generate(&args, &sig, &item, &description),
        (Err(error), _) => fallback::emit(&item, error),
        (Ok(()), None) => fallback::emit(
            &item,
            syn::Error::new(Span::call_site(), "missing description"),
        ),
    }
}

fn generate(
    args: &AbilityArgs,
    sig: &Signature,
    item: &ItemFn,
    description: &TokenStream,
) -> TokenStream {
    let p = match &args.krate {
        Some(krate) => quote!(#krate::__private),
        None => quote!(::abilities::__private),
    };
    let fn_ident = &item.sig.ident;
    let fn_name = fn_ident.to_string();
    let fn_name = fn_name.strip_prefix("r#").unwrap_or(&fn_name);
    let name = args
        .name
        .as_ref()
        .map_or_else(|| LitStr::new(fn_name, fn_ident.span()), Clone::clone);
    let flatten = args.flatten.is_some();
    let output_ty = match &sig.output {
        Output::Plain(ty) | Output::Result { ok: Some(ty), .. } => Some(ty),
        Output::Unit | Output::Result { ok: None, .. } => None,
    };
    let owned: Vec<&Param> = sig.params.iter().filter(|p| p.kind.is_owned()).collect();

    // The input: none, named parameters, or the one flattened value. Whether an owned
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
        let count = owned.iter().map(|param| {
            let value = is_value(&param.ty);
            quote!((#value as usize))
        });
        let message = format!(
            "`flatten` needs exactly one value parameter (extractors do not count), and `{fn_name}` has none or several; remove `flatten` to take named parameters"
        );
        let flatten_span = args.flatten.unwrap_or_else(Span::call_site);
        asserts.extend(quote_spanned!(flatten_span=> const _: () = ::core::assert!(0 #(+ #count)* == 1, "{}", #message);));
        // The `#[param]` keys of the flattened value (the assertions above keep them off
        // extractors).
        let described = owned.iter().find_map(|param| match &param.kind {
            ParamKind::Owned(param_args, Some(_)) => Some((*param, &**param_args)),
            _ => None,
        });
        let (default, description, complete) = match described {
            Some((param, param_args)) => {
                let (_, default) = default_fns(
                    &p,
                    &param.ident,
                    &param.ty,
                    param_args.default.as_ref(),
                    &mut support,
                );
                (
                    default,
                    option_str(param_args.description.as_ref()),
                    completer(&p, param_args.complete.as_ref()),
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
                default_fns(&p, ident, ty, param_args.default.as_ref(), &mut support);
            let description = option_str(param_args.description.as_ref());
            let complete = completer(&p, param_args.complete.as_ref());
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

    // The call, with borrowed parameters taken from the context.
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
        Output::Plain(ty) => quote_spanned!(ty.span()=> #p::into_output::<#ty>(__ability_out)),
        Output::Result { ok, err_span } => {
            let ok_arm = match ok {
                Some(ty) => quote_spanned!(ty.span()=>
                    ::core::result::Result::Ok(__ability_value) => #p::into_output::<#ty>(__ability_value)
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
    let output_def = match output_ty {
        Some(ty) => {
            let schema = quote_spanned!(ty.span()=> <#ty as #p::AbilityOutput>::output_schema);
            quote!(#schema as fn() -> ::core::option::Option<#p::schemars::Schema>)
        }
        None => {
            quote!(#p::no_output_schema as fn() -> ::core::option::Option<#p::schemars::Schema>)
        }
    };

    let semantic = semantic_variant(args);
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
    let danger = match args.danger.as_ref().map(LitStr::value).as_deref() {
        Some("safe") => quote!(::core::option::Option::Some(#p::Danger::Safe)),
        Some("reversible") => quote!(::core::option::Option::Some(#p::Danger::Reversible)),
        Some("destructive") => quote!(::core::option::Option::Some(#p::Danger::Destructive)),
        Some("dangerous") => quote!(::core::option::Option::Some(#p::Danger::Dangerous)),
        Some("forbidden") => quote!(::core::option::Option::Some(#p::Danger::Forbidden)),
        _ => quote!(::core::option::Option::None),
    };
    let task = match args.task.as_ref().map(LitStr::value).as_deref() {
        Some("optional") => quote!(#p::TaskSupport::Optional),
        Some("required") => quote!(#p::TaskSupport::Required),
        _ => quote!(#p::TaskSupport::Forbidden),
    };
    let rate = match args
        .rate
        .as_ref()
        .and_then(|lit| abilities_core::parse_rate(&lit.value()).ok())
    {
        Some((calls, period)) => quote!(::core::option::Option::Some((#calls, #period))),
        None => quote!(::core::option::Option::None),
    };
    let deprecated = match deprecation(&item.attrs) {
        Some(note) => quote!(::core::option::Option::Some(#note)),
        None => quote!(::core::option::Option::None),
    };
    let line = quote_spanned!(fn_ident.span()=> ::core::line!());
    let file = quote_spanned!(fn_ident.span()=> ::core::file!());

    quote! {
        #item

        #[doc(hidden)]
        #[allow(non_snake_case, non_camel_case_types, deprecated, clippy::all)]
        const _: () = {
            #support
            #asserts

            fn __ability_call(
                __ability_ctx: #p::Context,
                __ability_args: #p::serde_json::Value,
            ) -> #p::CallFuture {
                ::std::boxed::Box::pin(async move {
                    #decode
                    let __ability_out = #fn_ident(#(#call_args),*) #await_;
                    #finish
                })
            }

            #p::inventory::submit! {
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
                    danger: #danger,
                    task: #task,
                    rate: #rate,
                    deprecated: #deprecated,
                    input: #input_def,
                    requires: #requires,
                    output: #output_def,
                    call: __ability_call,
                    rust_path: ::core::concat!(::core::module_path!(), "::", #fn_name),
                    file: #file,
                    line: #line,
                }
            }
        };
    }
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

fn ident_name(ident: &Ident) -> String {
    let name = ident.to_string();
    name.strip_prefix("r#").unwrap_or(&name).to_owned()
}

fn semantic_variant(args: &AbilityArgs) -> Ident {
    let value = args
        .semantic
        .as_ref()
        .map(LitStr::value)
        .unwrap_or_default();
    let variant = match value.as_str() {
        "CREATE" => "Create",
        "UPDATE" => "Update",
        "DELETE" => "Delete",
        "EXECUTE" => "Execute",
        _ => "Read",
    };
    Ident::new(
        variant,
        args.semantic
            .as_ref()
            .map_or_else(Span::call_site, LitStr::span),
    )
}

fn option_str(lit: Option<&LitStr>) -> TokenStream {
    match lit {
        Some(lit) => quote!(::core::option::Option::Some(#lit)),
        None => quote!(::core::option::Option::None),
    }
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
