//! Parse the arguments of `#[ability(...)]` and `#[param(...)]`, collecting every error.

use proc_macro2::{Span, TokenStream};
use syn::meta::ParseNestedMeta;
use syn::parse::Parser;
use syn::spanned::Spanned;
use syn::{Expr, Lit, LitBool, LitStr, Token};

use abilities_core::{Danger, Semantic, TaskSupport, one_of, parse_rate};

/// The keys `#[ability]` accepts, in the order the "unknown key" error lists them.
pub(crate) const ABILITY_KEYS: &[&str] = &[
    SEMANTIC,
    FLATTEN,
    NAME,
    TITLE,
    DESCRIPTION,
    CATEGORY,
    PERMISSION,
    PUBLIC,
    SITE,
    READ_ONLY,
    DESTRUCTIVE,
    IDEMPOTENT,
    OPEN_WORLD,
    RESOURCE,
    MIME_TYPE,
    PROMPT,
    FAMILY,
    DANGER,
    CONFIRM,
    TASK,
    RATE,
    META,
    CRATE,
];
pub(crate) const SEMANTIC: &str = "semantic";
const FLATTEN: &str = "flatten";
const NAME: &str = "name";
const TITLE: &str = "title";
const DESCRIPTION: &str = "description";
const CATEGORY: &str = "category";
const PERMISSION: &str = "permission";
const PUBLIC: &str = "public";
const SITE: &str = "site";
const READ_ONLY: &str = "read_only";
const DESTRUCTIVE: &str = "destructive";
const IDEMPOTENT: &str = "idempotent";
const OPEN_WORLD: &str = "open_world";
const RESOURCE: &str = "resource";
const MIME_TYPE: &str = "mime_type";
const PROMPT: &str = "prompt";
const FAMILY: &str = "family";
const DANGER: &str = "danger";
const CONFIRM: &str = "confirm";
const TASK: &str = "task";
const RATE: &str = "rate";
const META: &str = "meta";
const CRATE: &str = "crate";

/// The keys `#[param]` accepts.
pub(crate) const PARAM_KEYS: &[&str] = &[DESCRIPTION, DEFAULT, COMPLETE, HEADER, SENSITIVE];
const DEFAULT: &str = "default";
const SENSITIVE: &str = "sensitive";
const COMPLETE: &str = "complete";
const HEADER: &str = "header";

/// A value the attribute spelled as a string, read once into its type, with the span of the
/// literal that spelled it.
#[derive(Clone, Copy)]
pub(crate) struct Written<T> {
    pub(crate) value: T,
    pub(crate) span: Span,
}

/// What `#[ability(...)]` said.
#[derive(Default)]
pub(crate) struct AbilityArgs {
    /// The keys written, each once (a second is reported as a duplicate and skipped).
    pub(crate) written: Vec<&'static str>,
    pub(crate) semantic: Option<Written<Semantic>>,
    pub(crate) flatten: Option<Span>,
    pub(crate) name: Option<LitStr>,
    pub(crate) title: Option<LitStr>,
    pub(crate) description: Option<LitStr>,
    pub(crate) category: Option<LitStr>,
    pub(crate) permission: Option<LitStr>,
    pub(crate) public: Option<LitBool>,
    pub(crate) site: Option<LitBool>,
    pub(crate) read_only: Option<LitBool>,
    pub(crate) destructive: Option<LitBool>,
    pub(crate) idempotent: Option<LitBool>,
    pub(crate) open_world: Option<LitBool>,
    /// `resource = "scheme://path"` or a template `scheme://{var}/path`.
    pub(crate) resource: Option<LitStr>,
    pub(crate) mime_type: Option<LitStr>,
    /// `prompt`: served as an MCP prompt.
    pub(crate) prompt: Option<Span>,
    /// `family = "observe"`: the MCP-AQL endpoint family.
    pub(crate) family: Option<LitStr>,
    /// `meta(owner = "billing", tier = 2)`: the tool's `_meta`, as JSON object text.
    pub(crate) meta: Option<LitStr>,
    /// `danger = "destructive"`: the MCP-AQL danger level.
    pub(crate) danger: Option<Written<Danger>>,
    /// `confirm` | `confirm = false`: whether a call must be confirmed by the user (by
    /// default, when the danger level is destructive or above).
    pub(crate) confirm: Option<LitBool>,
    /// `task = "optional"`: whether the ability may run as a background task.
    pub(crate) task: Option<Written<TaskSupport>>,
    /// `rate = "10/min"`: how often one caller may call the ability, as (calls, seconds).
    pub(crate) rate: Option<Written<(u32, u64)>>,
    /// `crate = "my_facade::abilities"`: where generated code finds the framework.
    pub(crate) krate: Option<syn::Path>,
}

/// What `#[param(...)]` said.
#[derive(Default)]
pub(crate) struct ParamArgs {
    pub(crate) description: Option<LitStr>,
    pub(crate) default: Option<Expr>,
    /// `complete = path::to::fn`: completes the argument's values.
    pub(crate) complete: Option<syn::Path>,
    /// `header = "Region"`: the client mirrors the value in the `Mcp-Param-Region` header.
    pub(crate) header: Option<LitStr>,
    /// `sensitive`: the value never appears in a log, an audit event or an error message.
    pub(crate) sensitive: Option<Span>,
}

/// Collects errors so every mistake is reported in one compile.
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(error),
            None => self.0 = Some(error),
        }
    }

    pub(crate) fn spanned(&mut self, span: impl Spanned, message: impl std::fmt::Display) {
        self.push(syn::Error::new(span.span(), message));
    }

    pub(crate) fn into_result(self) -> Result<(), syn::Error> {
        self.0.map_or(Ok(()), Err)
    }
}

/// Parse `#[ability(...)]`'s arguments.
pub(crate) fn parse_ability_args(tokens: TokenStream, errors: &mut Errors) -> AbilityArgs {
    let mut args = AbilityArgs::default();
    let parser = syn::meta::parser(|meta| {
        let Some(key) = meta.path.get_ident().map(ToString::to_string) else {
            errors.spanned(
                &meta.path,
                unknown_key_message("ability", &meta.path_string(), ABILITY_KEYS),
            );
            return skip_value(&meta);
        };
        if let Some(known) = ABILITY_KEYS.iter().find(|k| **k == key) {
            if args.written.contains(known) {
                errors.spanned(&meta.path, format!("duplicate attribute `{key}`"));
                return skip_value(&meta);
            }
            args.written.push(*known);
        }
        match key.as_str() {
            // semantic = "CREATE" | "READ" | "UPDATE" | "DELETE" | "EXECUTE"
            SEMANTIC => spelled(
                &meta,
                &mut args.semantic,
                SEMANTIC,
                "semantic = \"READ\"",
                |text| {
                    let all = Semantic::ALL.map(Semantic::as_str);
                    Semantic::parse(text).ok_or_else(|| unknown_value("semantic", text, all))
                },
                errors,
            )?,
            // flatten
            FLATTEN => {
                if meta.input.peek(Token![=]) || meta.input.peek(syn::token::Paren) {
                    errors.spanned(&meta.path, "`flatten` takes no value: write `flatten`");
                    skip_value(&meta)?;
                } else {
                    set(&mut args.flatten, meta.path.span(), &meta, errors);
                }
            }
            // name = "my-plugin/count-posts"
            NAME => string_key(
                &meta,
                &mut args.name,
                NAME,
                "name = \"my-plugin/count-posts\"",
                errors,
            )?,
            // title = "Count posts"
            TITLE => string_key(
                &meta,
                &mut args.title,
                TITLE,
                "title = \"Count posts\"",
                errors,
            )?,
            // description = "..."
            DESCRIPTION => string_key(
                &meta,
                &mut args.description,
                DESCRIPTION,
                "description = \"Count posts.\"",
                errors,
            )?,
            // category = "site"
            CATEGORY => string_key(
                &meta,
                &mut args.category,
                CATEGORY,
                "category = \"site\"",
                errors,
            )?,
            // permission = "posts:write"
            PERMISSION => string_key(
                &meta,
                &mut args.permission,
                PERMISSION,
                "permission = \"posts:write\"",
                errors,
            )?,
            // public | public = true | public = false (and likewise for the flags below)
            PUBLIC => bool_key(&meta, &mut args.public, PUBLIC, errors)?,
            SITE => bool_key(&meta, &mut args.site, SITE, errors)?,
            READ_ONLY => bool_key(&meta, &mut args.read_only, READ_ONLY, errors)?,
            DESTRUCTIVE => bool_key(&meta, &mut args.destructive, DESTRUCTIVE, errors)?,
            IDEMPOTENT => bool_key(&meta, &mut args.idempotent, IDEMPOTENT, errors)?,
            OPEN_WORLD => bool_key(&meta, &mut args.open_world, OPEN_WORLD, errors)?,
            CONFIRM => bool_key(&meta, &mut args.confirm, CONFIRM, errors)?,
            // resource = "test://static-text" | "test://template/{id}/data"
            RESOURCE => string_key(
                &meta,
                &mut args.resource,
                RESOURCE,
                "resource = \"docs://readme\"",
                errors,
            )?,
            // mime_type = "text/plain"
            MIME_TYPE => string_key(
                &meta,
                &mut args.mime_type,
                MIME_TYPE,
                "mime_type = \"text/markdown\"",
                errors,
            )?,
            // meta(owner = "billing", tier = 2, beta = true)
            META => meta_key(&meta, &mut args.meta, errors)?,
            // family = "observe"
            FAMILY => string_key(
                &meta,
                &mut args.family,
                FAMILY,
                "family = \"observe\"",
                errors,
            )?,
            // danger = "safe" | "reversible" | "destructive" | "dangerous" | "forbidden"
            DANGER => spelled(
                &meta,
                &mut args.danger,
                DANGER,
                "danger = \"destructive\"",
                |text| {
                    let all = Danger::ALL.map(Danger::as_str);
                    Danger::parse(text).ok_or_else(|| unknown_value("danger level", text, all))
                },
                errors,
            )?,
            // task = "forbidden" | "optional" | "required"
            TASK => spelled(
                &meta,
                &mut args.task,
                TASK,
                "task = \"optional\"",
                |text| {
                    let all = TaskSupport::ALL.map(TaskSupport::as_str);
                    TaskSupport::parse(text).ok_or_else(|| unknown_value("task support", text, all))
                },
                errors,
            )?,
            // rate = "10/min" | "5/s" | "1000/hour" | "100/15min"
            RATE => spelled(
                &meta,
                &mut args.rate,
                RATE,
                "rate = \"10/min\"",
                |text| parse_rate(text).map_err(|e| e.to_string()),
                errors,
            )?,
            // crate = "path::to::abilities" (for crates that re-export the framework)
            CRATE => {
                if let Some(lit) =
                    string_value(&meta, CRATE, "crate = \"my_facade::abilities\"", errors)?
                {
                    match lit.parse::<syn::Path>() {
                        Ok(path) => set(&mut args.krate, path, &meta, errors),
                        Err(_) => errors.spanned(
                            &lit,
                            format!(
                                "`crate` takes the path of the abilities crate, like \"my_facade::abilities\"; \"{}\" is not a path",
                                lit.value()
                            ),
                        ),
                    }
                }
            }
            // prompt
            PROMPT => {
                if meta.input.peek(Token![=]) || meta.input.peek(syn::token::Paren) {
                    errors.spanned(&meta.path, "`prompt` takes no value: write `prompt`");
                    skip_value(&meta)?;
                } else {
                    set(&mut args.prompt, meta.path.span(), &meta, errors);
                }
            }
            other => {
                errors.spanned(
                    &meta.path,
                    unknown_key_message("ability", other, ABILITY_KEYS),
                );
                skip_value(&meta)?;
            }
        }
        Ok(())
    });
    if let Err(e) = parser.parse2(tokens) {
        errors.push(e);
    }
    args
}

/// Parse one `#[param(...)]` attribute into `args`.
pub(crate) fn parse_param_attr(attr: &syn::Attribute, args: &mut ParamArgs, errors: &mut Errors) {
    let result = attr.parse_nested_meta(|meta| {
        let key = meta.path_string();
        match key.as_str() {
            // description = "..."
            DESCRIPTION => string_key(
                &meta,
                &mut args.description,
                DESCRIPTION,
                "description = \"The post id.\"",
                errors,
            )?,
            // header = "Region"
            HEADER => {
                if let Some(lit) = string_value(&meta, HEADER, "header = \"Region\"", errors)? {
                    let name = lit.value();
                    if name.is_empty()
                        || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                    {
                        errors.spanned(
                            &lit,
                            format!(
                                "invalid header name \"{name}\": letters, digits and `-`, like \"Region\" (sent as `Mcp-Param-Region`)"
                            ),
                        );
                    }
                    set(&mut args.header, lit, &meta, errors);
                }
            }
            // sensitive
            SENSITIVE => {
                if meta.input.peek(Token![=]) || meta.input.peek(syn::token::Paren) {
                    errors.spanned(&meta.path, "`sensitive` takes no value: write `sensitive`");
                    skip_value(&meta)?;
                } else {
                    set(&mut args.sensitive, meta.path.span(), &meta, errors);
                }
            }
            // default = <expression of the parameter's type>
            DEFAULT => {
                let expr: Expr = meta.value()?.parse()?;
                set(&mut args.default, expr, &meta, errors);
            }
            // complete = path::to::completer
            COMPLETE => {
                let expr: Expr = meta.value()?.parse()?;
                match expr {
                    Expr::Path(path) if path.qself.is_none() => {
                        set(&mut args.complete, path.path, &meta, errors);
                    }
                    other => errors.spanned(
                        &other,
                        "expected the path of a function `fn(&Context, &str) -> Vec<String>`, like `complete = post_slugs`",
                    ),
                }
            }
            other => {
                errors.spanned(&meta.path, unknown_key_message("param", other, PARAM_KEYS));
                skip_value(&meta)?;
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        errors.push(e);
    }
}

trait PathString {
    fn path_string(&self) -> String;
}

impl PathString for ParseNestedMeta<'_> {
    fn path_string(&self) -> String {
        self.path
            .segments
            .iter()
            .map(|s| s.ident.to_string())
            .collect::<Vec<_>>()
            .join("::")
    }
}

fn unknown_key_message(attr: &str, key: &str, valid: &[&str]) -> String {
    format!(
        "unknown {attr} attribute `{key}`; expected one of: {}",
        valid
            .iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// `unknown {noun} "{text}"; expected one of "a", "b"`.
fn unknown_value(noun: &str, text: &str, all: impl IntoIterator<Item = &'static str>) -> String {
    format!("unknown {noun} \"{text}\"; expected one of {}", one_of(all))
}

/// `key = "text"`, read into a `T` by `parse` (whose error is reported at the literal).
fn spelled<T>(
    meta: &ParseNestedMeta<'_>,
    slot: &mut Option<Written<T>>,
    key: &str,
    example: &str,
    parse: impl FnOnce(&str) -> Result<T, String>,
    errors: &mut Errors,
) -> syn::Result<()> {
    if let Some(lit) = string_value(meta, key, example, errors)? {
        match parse(&lit.value()) {
            Ok(value) => set(
                slot,
                Written {
                    value,
                    span: lit.span(),
                },
                meta,
                errors,
            ),
            Err(reason) => errors.spanned(&lit, reason),
        }
    }
    Ok(())
}

/// Store a value, or report a duplicate at the second occurrence.
fn set<T>(slot: &mut Option<T>, value: T, meta: &ParseNestedMeta<'_>, errors: &mut Errors) {
    if slot.is_some() {
        errors.spanned(
            &meta.path,
            format!("duplicate attribute `{}`", meta.path_string()),
        );
    } else {
        *slot = Some(value);
    }
}

/// Consume whatever follows a key we reject, so parsing can go on.
fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        meta.value()?.parse::<Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        let _content;
        syn::parenthesized!(_content in meta.input);
        let _: TokenStream = _content.parse()?;
    }
    Ok(())
}

/// `meta(key = value, ...)`: each value a string, number or bool literal, each key once;
/// kept as the text of a JSON object.
fn meta_key(
    meta: &ParseNestedMeta<'_>,
    slot: &mut Option<LitStr>,
    errors: &mut Errors,
) -> syn::Result<()> {
    const EXAMPLE: &str = "meta(owner = \"billing\", tier = 2)";
    if !meta.input.peek(syn::token::Paren) {
        errors.spanned(&meta.path, format!("`meta` takes a list, like `{EXAMPLE}`"));
        return skip_value(meta);
    }
    let mut object = serde_json::Map::new();
    meta.parse_nested_meta(|entry| {
        let key = entry.path.get_ident().map(ToString::to_string);
        let Some(key) = key else {
            errors.spanned(
                &entry.path,
                format!("a `meta` key is one name, like `{EXAMPLE}`"),
            );
            return skip_value(&entry);
        };
        if !entry.input.peek(Token![=]) {
            errors.spanned(
                &entry.path,
                format!("`{key}` needs a value, like `{EXAMPLE}`"),
            );
            return skip_value(&entry);
        }
        let expr: Expr = entry.value()?.parse()?;
        let Some(value) = meta_value(&expr) else {
            errors.spanned(
                &expr,
                "a `meta` value is a string, a number (an integer within 64 bits) or `true`/`false`",
            );
            return Ok(());
        };
        if object.insert(key.clone(), value).is_some() {
            errors.spanned(&entry.path, format!("duplicate `meta` key `{key}`"));
        }
        Ok(())
    })?;
    let text = serde_json::Value::Object(object).to_string();
    set(slot, LitStr::new(&text, meta.path.span()), meta, errors);
    Ok(())
}

/// The JSON of a `meta` value: a string, bool or number literal, a number with a minus.
fn meta_value(expr: &Expr) -> Option<serde_json::Value> {
    use serde_json::Value;
    let (negative, lit) = match expr {
        Expr::Lit(syn::ExprLit { lit, .. }) => (false, lit),
        Expr::Unary(syn::ExprUnary {
            op: syn::UnOp::Neg(_),
            expr,
            ..
        }) => match &**expr {
            Expr::Lit(syn::ExprLit { lit, .. }) => (true, lit),
            _ => return None,
        },
        _ => return None,
    };
    match lit {
        syn::Lit::Str(s) if !negative => Some(Value::String(s.value())),
        syn::Lit::Bool(b) if !negative => Some(Value::Bool(b.value)),
        syn::Lit::Int(i) if negative => {
            let magnitude = i.base10_parse::<u64>().ok()?;
            0i64.checked_sub_unsigned(magnitude).map(Into::into)
        }
        syn::Lit::Int(i) => i.base10_parse::<u64>().ok().map(Into::into),
        syn::Lit::Float(f) => {
            let value = f.base10_parse::<f64>().ok()?;
            serde_json::Number::from_f64(if negative { -value } else { value }).map(Value::Number)
        }
        _ => None,
    }
}

fn string_key(
    meta: &ParseNestedMeta<'_>,
    slot: &mut Option<LitStr>,
    key: &str,
    example: &str,
    errors: &mut Errors,
) -> syn::Result<()> {
    if let Some(lit) = string_value(meta, key, example, errors)? {
        set(slot, lit, meta, errors);
    }
    Ok(())
}

/// `key = "string"`: anything else is an error at the value showing the expected form.
fn string_value(
    meta: &ParseNestedMeta<'_>,
    key: &str,
    example: &str,
    errors: &mut Errors,
) -> syn::Result<Option<LitStr>> {
    if !meta.input.peek(Token![=]) {
        errors.spanned(
            &meta.path,
            format!("`{key}` needs a string value, like `{example}`"),
        );
        skip_value(meta)?;
        return Ok(None);
    }
    let expr: Expr = meta.value()?.parse()?;
    match expr {
        Expr::Lit(syn::ExprLit {
            lit: Lit::Str(lit), ..
        }) => {
            if !lit.suffix().is_empty() {
                errors.spanned(
                    &lit,
                    format!("unexpected suffix `{}` on string literal", lit.suffix()),
                );
                return Ok(None);
            }
            Ok(Some(lit))
        }
        other => {
            errors.spanned(
                &other,
                format!("expected a string literal, like `{example}`"),
            );
            Ok(None)
        }
    }
}

/// `key`, `key = true` or `key = false`.
fn bool_key(
    meta: &ParseNestedMeta<'_>,
    slot: &mut Option<LitBool>,
    key: &str,
    errors: &mut Errors,
) -> syn::Result<()> {
    if !meta.input.peek(Token![=]) {
        if meta.input.peek(syn::token::Paren) {
            errors.spanned(
                &meta.path,
                format!("expected `{key}` or `{key} = true|false`"),
            );
            return skip_value(meta);
        }
        set(slot, LitBool::new(true, meta.path.span()), meta, errors);
        return Ok(());
    }
    let expr: Expr = meta.value()?.parse()?;
    match expr {
        Expr::Lit(syn::ExprLit {
            lit: Lit::Bool(lit),
            ..
        }) => set(slot, lit, meta, errors),
        other => errors.spanned(
            &other,
            format!("expected `true` or `false`, like `{key} = false`"),
        ),
    }
    Ok(())
}
