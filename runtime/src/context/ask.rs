//! Questions to the client: [`Ask`], what [`Context::ask`] returns, and the [`Root`]s a
//! client shares.

use super::{Context, Elicitation};
use crate::{AbilityError, ErrorCode};

/// A root the client shares with the server ([`Context::list_roots`]): a directory or a
/// project, by URI.
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
pub struct Root {
    /// Where it is, e.g. `file:///home/ada/project`.
    pub uri: String,
    /// Its display name, if the client gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl Root {
    /// The root at `uri`, without a name.
    pub fn new(uri: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            name: None,
        }
    }
}

/// Questions to the client under one key ([`Context::ask`]).
#[derive(Clone, Copy, Debug)]
pub struct Ask<'a> {
    pub(super) ctx: &'a Context,
    pub(super) key: Option<&'a str>,
}

impl Ask<'_> {
    /// [`Context::elicit`] under this key.
    pub async fn elicit(
        self,
        message: &str,
        requested_schema: serde_json::Value,
    ) -> Result<Elicitation, AbilityError> {
        let client = self.ctx.client_for("elicitation")?;
        let params = serde_json::json!({"mode": "form", "message": message, "requestedSchema": requested_schema});
        let result = client.elicit(self.key, params).await?;
        serde_json::from_value(result).map_err(|e| {
            AbilityError::new(
                ErrorCode::ExecutionFailed,
                format!("the client's elicitation answer is malformed: {e}"),
            )
        })
    }

    /// [`Context::sample`] under this key.
    pub async fn sample(
        self,
        params: serde_json::Value,
    ) -> Result<serde_json::Value, AbilityError> {
        self.ctx
            .client_for("sampling")?
            .sample(self.key, params)
            .await
    }

    /// [`Context::sample_text`] under this key.
    pub async fn sample_text(self, prompt: &str, max_tokens: u32) -> Result<String, AbilityError> {
        let result = self
            .sample(serde_json::json!({
                "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
                "maxTokens": max_tokens
            }))
            .await?;
        let content = &result["content"];
        let text = if content.is_array() {
            &content[0]["text"]
        } else {
            &content["text"]
        };
        text.as_str().map(str::to_owned).ok_or_else(|| {
            AbilityError::new(
                ErrorCode::ExecutionFailed,
                "the client's model answered without text",
            )
        })
    }

    /// [`Context::list_roots`] under this key.
    pub async fn list_roots(self) -> Result<Vec<Root>, AbilityError> {
        #[derive(serde::Deserialize)]
        struct Roots {
            roots: Vec<Root>,
        }
        let result = self.ctx.client_for("roots")?.list_roots(self.key).await?;
        serde_json::from_value::<Roots>(result)
            .map(|r| r.roots)
            .map_err(|e| {
                AbilityError::new(
                    ErrorCode::ExecutionFailed,
                    format!("the client's roots answer is malformed: {e}"),
                )
            })
    }
}
