//! The seal of `requestState` (protocol 2026-07-28): the server's key, the state's lifetime,
//! and the key confirmation tokens are signed with, derived from it.

use std::time::Duration;

use rmcp::model::RequestStateCodec;

/// How long a `requestState` stays valid when the builder sets nothing.
pub(crate) const DEFAULT_STATE_LIFETIME: Duration = Duration::from_secs(600);
/// Seals and opens `requestState`: the server's key and the state's lifetime.
pub(crate) struct StateSeal {
    codec: RequestStateCodec,
    lifetime: Duration,
    /// The key confirmation tokens are signed with: derived from the same key, for another
    /// purpose, so replicas sharing the key verify each other's tokens.
    #[cfg_attr(
        not(feature = "aql"),
        allow(dead_code, reason = "used by the MCP-AQL surface")
    )]
    pub(crate) token_key: [u8; 32],
}

impl StateSeal {
    /// The codec that seals and opens states.
    pub(crate) fn codec(&self) -> &RequestStateCodec {
        &self.codec
    }

    /// How long a state it seals stays valid.
    pub(crate) fn lifetime(&self) -> Duration {
        self.lifetime
    }

    /// A seal with `key` (at least 32 bytes; checked by the builder) or, without one, a random
    /// key of this process.
    pub(crate) fn new(key: Option<&[u8]>, lifetime: Duration) -> Result<Self, String> {
        let key = match key {
            Some(key) => key.to_vec(),
            None => {
                let mut key = vec![0u8; 32];
                getrandom::fill(&mut key).map_err(|e| format!("no randomness for a key: {e}"))?;
                key
            }
        };
        let token_key = crate::digest::keyed(&key, &[b"abilities/confirmation-token"])
            .ok_or_else(|| "the key cannot key HMAC-SHA256".to_owned())?;
        let codec = RequestStateCodec::try_new(key).map_err(|e| e.to_string())?;
        Ok(Self {
            codec,
            lifetime,
            token_key,
        })
    }
}
