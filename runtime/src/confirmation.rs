//! Confirmation tokens (what a call that must be confirmed offers, spent by its retry):
//! signed, so any replica sharing the key verifies them; bound to their holder; recorded in the store's ledger with the operation and a SHA-256 of the canonical
//! parameters they confirm, and spendable once there; expiring after a time limit.
//!
//! A token is `conf_` and 54 URL-safe characters: a 128-bit id, the expiry (milliseconds
//! since the epoch) and the first 128 bits of an HMAC-SHA256 over both and the holder.

use std::time::{Duration, SystemTime};

use base64::Engine as _;
use serde_json::{Map, Value, json};

use crate::digest::hex;
use crate::error::Confirmation;
use crate::ledger::{Holder, store_failed};
use crate::store::{Claim, Claimed, Spend, TokenRecord};
use crate::{AbilityError, ErrorCode};

/// Tolerance added to the expiry for clocks that disagree.
const SKEW_MS: u64 = 30_000;
/// What every token starts with.
const PREFIX: &str = "conf_";
const TAG: usize = 16;

/// The signature of token `id` expiring at `exp` for `holder`.
fn tag(holder: &Holder<'_>, id: &[u8], exp: u64) -> Option<[u8; 32]> {
    let key = &holder.seal().token_key;
    crate::digest::keyed(
        key,
        &[id, &exp.to_be_bytes(), holder.token_holder().as_bytes()],
    )
}

/// Issue `holder` a token for `operation` with `params`, valid for `ttl`; `message` is what
/// the user is asked. A holder with as many unspent tokens as the server allows is refused
/// (`LIMIT_EXCEEDED`) until some are spent or expire; no other holder's tokens are touched.
pub(crate) async fn issue(
    holder: &Holder<'_>,
    operation: &str,
    params: &Map<String, Value>,
    ttl: Duration,
    message: String,
) -> Result<Confirmation, AbilityError> {
    let cannot = || AbilityError::internal("a confirmation token could not be issued");
    let mut id = [0u8; 16];
    getrandom::fill(&mut id).map_err(|e| {
        tracing::error!(error = %e, "no randomness for a confirmation token");
        cannot()
    })?;
    let now = crate::clock::now_ms();
    let exp = now.saturating_add(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX));
    let tag = tag(holder, &id, exp).ok_or_else(cannot)?;
    let ledger = holder.ledger();
    let record = TokenRecord {
        id: hex(&id),
        holder: holder.token_holder().into_owned(),
        operation: operation.to_owned(),
        params: hex(&digest(params)),
        issued_at_ms: now,
        expires_at_ms: exp.saturating_add(SKEW_MS),
    };
    let recorded = ledger
        .store
        .issue_token(&record, holder.token_limit())
        .await
        .map_err(|e| store_failed(&e))?;
    if !recorded {
        return Err(AbilityError::new(
            ErrorCode::LimitExceeded,
            format!(
                "You hold {} unspent confirmation tokens, as many as this server allows: \
                 confirm or let some expire first",
                ledger.tokens_per_holder
            ),
        )
        .with_details(json!({"limit": ledger.tokens_per_holder, "of": "confirmation tokens"})));
    }
    let mut bytes = Vec::with_capacity(16 + 8 + TAG);
    bytes.extend_from_slice(&id);
    bytes.extend_from_slice(&exp.to_be_bytes());
    bytes.extend_from_slice(&tag[..TAG]);
    Ok(Confirmation {
        token: format!(
            "{PREFIX}{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
        ),
        expires_at: rfc3339(SystemTime::UNIX_EPOCH + Duration::from_millis(exp)),
        message,
    })
}

/// Spend `token` on `operation` with `params`: each failed check has its own code. The
/// token is spent in the ledger before the operation runs, so of two replicas redeeming it
/// at once one succeeds.
pub(crate) async fn redeem(
    holder: &Holder<'_>,
    token: &str,
    operation: &str,
    params: &Map<String, Value>,
) -> Result<(), AbilityError> {
    let shown: String = token.chars().take(80).collect();
    let with_token = |code: ErrorCode, message: String| {
        AbilityError::new(code, message).with_details(json!({ "token": shown }))
    };
    let invalid = || {
        with_token(
            ErrorCode::TokenInvalid,
            format!("Confirmation token '{shown}' is not valid here"),
        )
    };
    let bytes = token
        .strip_prefix(PREFIX)
        .and_then(|b| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(b)
                .ok()
        })
        .filter(|b| b.len() == 16 + 8 + TAG)
        .ok_or_else(invalid)?;
    let (id, rest) = bytes.split_at(16);
    let (exp, sent_tag) = rest.split_at(8);
    let exp = u64::from_be_bytes(exp.try_into().map_err(|_| invalid())?);
    let expected = tag(holder, id, exp).ok_or_else(invalid)?;
    if !crate::digest::same(&expected[..TAG], sent_tag) {
        return Err(invalid());
    }
    if crate::clock::now_ms() > exp.saturating_add(SKEW_MS) {
        return Err(with_token(
            ErrorCode::TokenExpired,
            format!("Confirmation token '{shown}' expired; ask again"),
        ));
    }
    let record = TokenRecord {
        id: hex(id),
        holder: holder.token_holder().into_owned(),
        operation: operation.to_owned(),
        params: hex(&digest(params)),
        issued_at_ms: 0,
        expires_at_ms: exp,
    };
    let spent = holder
        .ledger()
        .store
        .spend_token(&record)
        .await
        .map_err(|e| store_failed(&e))?;
    match spent {
        Spend::Spent => Ok(()),
        Spend::AlreadyUsed => Err(with_token(
            ErrorCode::TokenAlreadyUsed,
            format!("Confirmation token '{shown}' was already used"),
        )),
        Spend::OtherScope {
            operation: confirms,
        } => Err(AbilityError::new(
            ErrorCode::TokenScopeMismatch,
            format!("Confirmation token '{shown}' confirms '{confirms}' with other parameters"),
        )
        .with_details(json!({
            "token": shown,
            "token_operation": confirms,
            "requested_operation": operation
        }))),
        Spend::Unknown => Err(invalid()),
    }
}

/// Spend the confirmation the user gave for `operation` in the answer `answer` (what names
/// it: sealed in a state, or sent up front with the request), once: the answer confirms one
/// call on every replica sharing the store, and a retry that carries it again (the same
/// request, the same state, or a later one it was sealed into) is refused as a spent token
/// is.
pub(crate) async fn spend_answer(
    holder: &Holder<'_>,
    answer: &str,
    operation: &str,
) -> Result<(), AbilityError> {
    let now = crate::clock::now_ms();
    let lifetime = u64::try_from(holder.seal().lifetime().as_millis()).unwrap_or(u64::MAX);
    let claim = Claim {
        holder: format!("confirmed:{}", holder.id()),
        key: answer.to_owned(),
        digest: hex(&crate::digest::canonical(&Value::from(operation))),
        now_ms: now,
        expires_at_ms: now.saturating_add(lifetime).saturating_add(SKEW_MS),
        // A spent answer is never settled: held for its whole life.
        owner: String::new(),
        lease_until_ms: now.saturating_add(lifetime).saturating_add(SKEW_MS),
    };
    let found = holder
        .ledger()
        .store
        .claim(&claim)
        .await
        .map_err(|e| store_failed(&e))?;
    match found {
        Claimed::New => Ok(()),
        _ => Err(AbilityError::new(
            ErrorCode::TokenAlreadyUsed,
            format!(
                "The confirmation of '{operation}' this requestState carries was already used: \
                 it confirms one call; call again to be asked again"
            ),
        )
        .with_details(json!({"operation": operation}))),
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

    #[test]
    fn dates_are_rfc3339() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        assert_eq!(
            rfc3339(UNIX_EPOCH + Duration::from_secs(1_796_083_200 + 3_723)),
            "2026-12-01T01:02:03Z"
        );
    }
}
