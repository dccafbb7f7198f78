//! Who calls: authenticating HTTP requests.
//!
//! You need this module when HTTP callers must prove who they are: [`StaticTokens`] for a fixed
//! set of bearer tokens, `JwtAuthenticator` (feature `jwt`) for OAuth 2.1 access tokens, or your
//! own [`Authenticator`]. What a caller may do is a [`Caller`](crate::Caller), at the crate root.

pub use abilities_runtime::{
    AuthError, AuthFuture, Authenticator, StaticTokens, bearer, bearer_token,
};
#[cfg(feature = "jwt")]
pub use abilities_runtime::{JwtAuthenticator, JwtAuthenticatorBuilder, JwtError, jsonwebtoken};
