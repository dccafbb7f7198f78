//! What one attempt at a call did, for the layers around it that must know: whether a
//! handler started (so its effects may have happened), and the idempotency key it runs
//! under. The pipeline marks it; the idempotency layers read it, typed, instead of guessing
//! from the answer whether the call ran.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use crate::AbilityError;

/// The idempotency key a call came with, and which layer answers for it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum HeldKey {
    /// The protocol layer claimed the key for the whole call: a surface that finds the same
    /// key among its own parameters runs under that claim.
    Claimed(Value),
    /// The protocol layer left the key to the surface, which claims it as if sent among its
    /// own parameters (one key namespace, one digest, wherever the key came from).
    Handed(Value),
}

/// One attempt at a call: see the module docs.
#[derive(Debug, Default)]
pub(crate) struct Attempt {
    started: AtomicBool,
    /// The call's answer is about its rounds of input (a question for the client, a
    /// capability it must declare, answers too large to carry): it runs again from the start.
    asked: AtomicBool,
    #[cfg_attr(
        not(feature = "aql"),
        allow(dead_code, reason = "used by the MCP-AQL surface")
    )]
    key: Option<HeldKey>,
    /// Why the surface refused a [handed](HeldKey::Handed) key (reused, in use, malformed):
    /// the protocol layer answers that as it answers for keys it claims itself.
    refused: OnceLock<AbilityError>,
    /// The attempt this one is part of (an MCP-AQL operation of a call): a handler that
    /// starts here started there too.
    within: Option<Arc<Attempt>>,
}

impl Attempt {
    /// An attempt under `key`, if the call came with one.
    pub(crate) fn new(key: Option<HeldKey>) -> Arc<Self> {
        Arc::new(Self {
            started: AtomicBool::new(false),
            asked: AtomicBool::new(false),
            key,
            refused: OnceLock::new(),
            within: None,
        })
    }

    /// A part of `within` (one operation of a call), with its own record of starting.
    #[cfg_attr(
        not(feature = "aql"),
        allow(dead_code, reason = "used by the MCP-AQL surface")
    )]
    pub(crate) fn part_of(within: Option<&Arc<Self>>) -> Arc<Self> {
        Arc::new(Self {
            started: AtomicBool::new(false),
            asked: AtomicBool::new(false),
            key: None,
            refused: OnceLock::new(),
            within: within.cloned(),
        })
    }

    /// A handler is about to run: from here on, the call may have taken effect.
    pub(crate) fn start(&self) {
        self.started.store(true, Ordering::Release);
        if let Some(within) = &self.within {
            within.start();
        }
    }

    /// The call answers with its rounds of input, not an outcome (see the field).
    pub(crate) fn ask(&self) {
        self.asked.store(true, Ordering::Release);
    }

    /// Whether the call answered with its rounds of input: nothing it did stands, and it
    /// runs again from the start.
    pub(crate) fn asked(&self) -> bool {
        self.asked.load(Ordering::Acquire)
    }

    /// Whether a handler started in this attempt.
    pub(crate) fn started(&self) -> bool {
        self.started.load(Ordering::Acquire)
    }

    /// The surface refused the key it was handed.
    #[cfg_attr(
        not(feature = "aql"),
        allow(dead_code, reason = "used by the MCP-AQL surface")
    )]
    pub(crate) fn refuse_key(&self, error: AbilityError) {
        let _ = self.refused.set(error);
    }

    /// Why the surface refused the key it was handed, if it did.
    pub(crate) fn key_refusal(&self) -> Option<&AbilityError> {
        self.refused.get()
    }

    /// The idempotency key the call came with, and who answers for it.
    #[cfg_attr(
        not(feature = "aql"),
        allow(dead_code, reason = "used by the MCP-AQL surface")
    )]
    pub(crate) fn key(&self) -> Option<&HeldKey> {
        self.key.as_ref()
    }
}
