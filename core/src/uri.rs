//! URI templates (RFC 6570 level 1: `{name}` variables between literals), as resources use
//! them.

/// The `{variable}` names of a URI template (RFC 6570 level 1), or why it is not one.
pub fn template_variables(uri: &str) -> Result<Vec<String>, String> {
    let scheme_end = uri
        .find(':')
        .ok_or("it needs a scheme, like `docs://readme`")?;
    let scheme = &uri[..scheme_end];
    let scheme_ok = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !scheme_ok {
        return Err("it needs a scheme, like `docs://readme`".into());
    }
    if uri.len() == scheme_end + 1 {
        return Err("nothing follows the scheme".into());
    }
    if uri.chars().any(char::is_whitespace) {
        return Err("URIs contain no whitespace".into());
    }
    let mut variables: Vec<String> = Vec::new();
    let mut rest = &uri[scheme_end..];
    while let Some(open) = rest.find(['{', '}']) {
        if rest[open..].starts_with('}') {
            return Err("a `}` closes no `{`".into());
        }
        let after = &rest[open + 1..];
        let close = after.find('}').ok_or("a `{` is not closed")?;
        let name = &after[..close];
        let valid = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(format!(
                "`{{{name}}}` is not a variable: write `{{name}}` with a parameter's name"
            ));
        }
        if variables.iter().any(|v| v == name) {
            return Err(format!("`{{{name}}}` appears twice"));
        }
        if after[close + 1..].starts_with('{') {
            return Err(
                "two variables in a row cannot be told apart: put a literal between them".into(),
            );
        }
        variables.push(name.to_owned());
        rest = &after[close + 1..];
    }
    Ok(variables)
}

/// A parsed URI template (RFC 6570 level 1: `{name}` variables between literals).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UriTemplate {
    pieces: Vec<Piece>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Piece {
    Literal(String),
    Variable(String),
}

impl UriTemplate {
    /// Parse `uri`; `None` when it has no variables (a plain URI) or is malformed (the
    /// attribute rejects malformed templates at compile time).
    pub fn parse(uri: &str) -> Option<Self> {
        let mut pieces = Vec::new();
        let mut rest = uri;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                pieces.push(Piece::Literal(rest[..open].to_owned()));
            }
            let after = &rest[open + 1..];
            let close = after.find('}')?;
            pieces.push(Piece::Variable(after[..close].to_owned()));
            rest = &after[close + 1..];
        }
        if !rest.is_empty() {
            pieces.push(Piece::Literal(rest.to_owned()));
        }
        pieces
            .iter()
            .any(|p| matches!(p, Piece::Variable(_)))
            .then_some(Self { pieces })
    }

    /// The variables' values in `uri`, percent-decoded, if `uri` matches. A value is never
    /// empty and never holds a `/`.
    pub fn matches(&self, uri: &str) -> Option<Vec<(&str, String)>> {
        let mut values = Vec::new();
        let mut rest = uri;
        let mut pieces = self.pieces.iter().peekable();
        while let Some(piece) = pieces.next() {
            match piece {
                Piece::Literal(literal) => rest = rest.strip_prefix(literal.as_str())?,
                Piece::Variable(name) => {
                    let end = match pieces.peek() {
                        Some(Piece::Literal(next)) => rest.find(next.as_str())?,
                        _ => rest.len(),
                    };
                    let raw = &rest[..end];
                    if raw.is_empty() || raw.contains('/') {
                        return None;
                    }
                    values.push((name.as_str(), percent_decode(raw)?));
                    rest = &rest[end..];
                }
            }
        }
        rest.is_empty().then_some(values)
    }
}

/// `raw` with its `%XX` escapes decoded; `None` for a malformed escape or bytes that are not
/// UTF-8.
pub fn percent_decode(raw: &str) -> Option<String> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = raw.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_are_named_and_separated() {
        assert_eq!(
            template_variables("files://{dir}/{name}.txt"),
            Ok(vec!["dir".to_owned(), "name".to_owned()])
        );
        assert_eq!(template_variables("docs://readme"), Ok(Vec::new()));
        for bad in [
            "no-scheme",
            "x:",
            "x://{a}{b}",
            "x://{a",
            "x://}",
            "x://{a}/{a}",
            "x://{1a}",
            "x:// a",
        ] {
            assert!(template_variables(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn templates_match_and_decode() {
        let t = UriTemplate::parse("test://template/{id}/data").unwrap();
        assert_eq!(
            t.matches("test://template/123/data"),
            Some(vec![("id", "123".to_owned())])
        );
        assert_eq!(
            t.matches("test://template/a%20b/data"),
            Some(vec![("id", "a b".to_owned())])
        );
        assert_eq!(t.matches("test://template//data"), None);
        assert_eq!(t.matches("test://template/1/2/data"), None);
        assert_eq!(t.matches("test://template/1/data/x"), None);
        assert_eq!(t.matches("test://template/%zz/data"), None);
        let t = UriTemplate::parse("db://{table}/{id}").unwrap();
        assert_eq!(
            t.matches("db://posts/7"),
            Some(vec![("table", "posts".to_owned()), ("id", "7".to_owned())])
        );
        assert_eq!(UriTemplate::parse("test://static-text"), None);
    }

    #[test]
    fn templates_match_whole_segments() {
        let template = UriTemplate::parse("files://{dir}/{name}.txt").unwrap();
        assert_eq!(
            template.matches("files://a%20b/c.txt"),
            Some(vec![("dir", "a b".to_owned()), ("name", "c".to_owned())])
        );
        assert_eq!(template.matches("files:///c.txt"), None);
        assert_eq!(template.matches("files://a/b/c.txt"), None);
        assert!(UriTemplate::parse("docs://readme").is_none());
    }
}
