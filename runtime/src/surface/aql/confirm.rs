//! Confirmation tokens: single use, bound to a session, an operation and a SHA-256 of its
//! canonical parameters, expiring after a time limit.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use base64::Engine as _;
use serde_json::{Map, Value, json};

use crate::{AbilityError, ErrorCode};

/// Tolerance added to the expiry for clocks that disagree.
const SKEW: Duration = Duration::from_secs(30);
/// Live tokens kept at most; the oldest go first.
const MAX_TOKENS: usize = 10_000;

#[derive(Debug)]
struct Token {
    session: u64,
    operation: String,
    params: [u8; 32],
    expires: Instant,
    used: bool,
}

/// The tokens issued by one surface.
#[derive(Debug, Default)]
pub(crate) struct Tokens(Mutex<HashMap<String, Token>>);

/// A token handed to the caller.
pub(crate) struct Issued {
    pub(crate) token: String,
    pub(crate) expires_at: String,
    /// What the user is asked to confirm.
    pub(crate) message: String,
}

impl Tokens {
    /// Issue a token for `operation` with `params`, valid for `ttl` in `session`; `message` is
    /// what the user is asked.
    pub(crate) fn issue(
        &self,
        session: u64,
        operation: &str,
        params: &Map<String, Value>,
        ttl: Duration,
        message: String,
    ) -> Result<Issued, AbilityError> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| {
            tracing::error!(error = %e, "no randomness for a confirmation token");
            AbilityError::internal("a confirmation token could not be issued")
        })?;
        let token = format!(
            "conf_{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
        );
        let now = Instant::now();
        let mut tokens = self.lock();
        tokens.retain(|_, t| t.expires + SKEW > now && !t.used);
        if tokens.len() >= MAX_TOKENS
            && let Some(oldest) = tokens
                .iter()
                .min_by_key(|(_, t)| t.expires)
                .map(|(k, _)| k.clone())
        {
            tokens.remove(&oldest);
        }
        tokens.insert(
            token.clone(),
            Token {
                session,
                operation: operation.to_owned(),
                params: digest(params),
                expires: now + ttl,
                used: false,
            },
        );
        Ok(Issued {
            token,
            expires_at: rfc3339(SystemTime::now() + ttl),
            message,
        })
    }

    /// Spend `token` on `operation` with `params`: each failed check has its own code. The
    /// token is marked used before the operation runs.
    pub(crate) fn redeem(
        &self,
        session: u64,
        token: &str,
        operation: &str,
        params: &Map<String, Value>,
    ) -> Result<(), AbilityError> {
        let shown: String = token.chars().take(80).collect();
        let mut tokens = self.lock();
        let Some(record) = tokens.get_mut(token).filter(|t| t.session == session) else {
            return Err(AbilityError::new(
                ErrorCode::TokenInvalid,
                format!("Confirmation token '{shown}' is not valid here"),
            )
            .with_details(json!({ "token": shown })));
        };
        if record.used {
            return Err(AbilityError::new(
                ErrorCode::TokenAlreadyUsed,
                format!("Confirmation token '{shown}' was already used"),
            )
            .with_details(json!({ "token": shown })));
        }
        if Instant::now() > record.expires + SKEW {
            return Err(AbilityError::new(
                ErrorCode::TokenExpired,
                format!("Confirmation token '{shown}' expired; ask again"),
            )
            .with_details(json!({ "token": shown })));
        }
        if record.operation != operation || record.params != digest(params) {
            return Err(AbilityError::new(
                ErrorCode::TokenScopeMismatch,
                format!(
                    "Confirmation token '{shown}' confirms '{}' with other parameters",
                    record.operation
                ),
            )
            .with_details(json!({
                "token": shown,
                "token_operation": record.operation,
                "requested_operation": operation
            })));
        }
        record.used = true;
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Token>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// SHA-256 of the canonical JSON of `params` (keys sorted at every level).
fn digest(params: &Map<String, Value>) -> [u8; 32] {
    crate::digest::canonical_object(params)
}

/// `2026-11-30T07:45:00Z` for a time.
pub(crate) fn rfc3339(time: SystemTime) -> String {
    crate::clock::utc(crate::clock::ms_of(time), false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    fn params(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    #[test]
    fn tokens_are_single_use_and_bound() {
        let tokens = Tokens::default();
        let p = params(json!({"id": 3, "opts": {"b": 1, "a": 2}}));
        let same = params(json!({"opts": {"a": 2, "b": 1}, "id": 3}));
        let issued = tokens
            .issue(1, "delete_todo", &p, Duration::from_secs(60), String::new())
            .unwrap();
        assert!(issued.token.starts_with("conf_") && issued.token.len() == 48);
        let code = |r: Result<(), AbilityError>| r.unwrap_err().code().as_str().to_owned();
        assert_eq!(
            code(tokens.redeem(2, &issued.token, "delete_todo", &p)),
            "TOKEN_INVALID"
        );
        assert_eq!(
            code(tokens.redeem(1, &issued.token, "delete_todo", &params(json!({"id": 4})))),
            "TOKEN_SCOPE_MISMATCH"
        );
        assert!(
            tokens
                .redeem(1, &issued.token, "delete_todo", &same)
                .is_ok()
        );
        assert_eq!(
            code(tokens.redeem(1, &issued.token, "delete_todo", &p)),
            "TOKEN_ALREADY_USED"
        );
        assert_eq!(
            code(tokens.redeem(1, "conf_nope", "delete_todo", &p)),
            "TOKEN_INVALID"
        );
    }

    #[test]
    fn expired_tokens_are_refused() {
        let tokens = Tokens::default();
        let p = Map::new();
        let issued = tokens
            .issue(1, "op", &p, Duration::ZERO, String::new())
            .unwrap();
        if let Some(t) = tokens.lock().get_mut(&issued.token) {
            t.expires = Instant::now().checked_sub(SKEW * 2).unwrap_or(t.expires);
        }
        let error = tokens.redeem(1, &issued.token, "op", &p).unwrap_err();
        assert_eq!(error.code().as_str(), "TOKEN_EXPIRED");
    }

    #[test]
    fn dates_are_rfc3339() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        assert_eq!(
            rfc3339(UNIX_EPOCH + Duration::from_secs(1_796_083_200 + 3_723)),
            "2026-12-01T01:02:03Z"
        );
    }
}
