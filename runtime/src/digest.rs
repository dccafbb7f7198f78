//! SHA-256 of JSON independent of its objects' key order (what binds a confirmation token
//! or a multi-round state to the parameters it was made for), keyed tags, and hex.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// `bytes` as lower-case hexadecimal, two digits a byte.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        text.push(char::from(DIGITS[usize::from(byte >> 4)]));
        text.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    text
}

/// SHA-256 of `value`, its objects' keys taken in sorted order at every level.
pub(crate) fn canonical(value: &Value) -> [u8; 32] {
    let mut hash = Sha256::new();
    update(&mut hash, value);
    hash.finalize().into()
}

/// HMAC-SHA256 of `parts` (each length-prefixed) under `key`; `None` only if the MAC refused
/// the key, which HMAC never does.
pub(crate) fn keyed(key: &[u8], parts: &[&[u8]]) -> Option<[u8; 32]> {
    use hmac::{KeyInit as _, Mac as _};
    let mut mac = hmac::Hmac::<Sha256>::new_from_slice(key).ok()?;
    for part in parts {
        mac.update(&(part.len() as u64).to_be_bytes());
        mac.update(part);
    }
    Some(mac.finalize().into_bytes().into())
}

/// Whether `a` and `b` are equal, in time that does not depend on where they differ.
#[cfg_attr(
    not(feature = "aql"),
    allow(dead_code, reason = "used by the MCP-AQL surface")
)]
pub(crate) fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// [`canonical`] of an object.
pub(crate) fn canonical_object(map: &Map<String, Value>) -> [u8; 32] {
    let mut hash = Sha256::new();
    object(&mut hash, map);
    hash.finalize().into()
}

fn update(hash: &mut Sha256, value: &Value) {
    match value {
        Value::Object(map) => object(hash, map),
        Value::Array(items) => {
            hash.update(b"[");
            for item in items {
                update(hash, item);
                hash.update(b",");
            }
            hash.update(b"]");
        }
        scalar => hash.update(scalar.to_string().as_bytes()),
    }
}

fn object(hash: &mut Sha256, map: &Map<String, Value>) {
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    hash.update(b"{");
    for key in keys {
        // Keys as JSON strings: quoted and escaped, so no key can pass for another.
        hash.update(Value::String(key.clone()).to_string().as_bytes());
        hash.update(b":");
        update(hash, &map[key]);
        hash.update(b",");
    }
    hash.update(b"}");
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{canonical, canonical_object, hex};

    #[test]
    fn hex_is_two_lower_case_digits_a_byte() {
        assert_eq!(hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
        assert_eq!(hex(&[]), "");
    }

    #[test]
    fn key_order_does_not_count_but_everything_else_does() {
        let a: serde_json::Value =
            serde_json::from_str(r#"{"b": [1, {"y": 2, "x": 1}], "a": "z"}"#).unwrap_or_default();
        let b = json!({"a": "z", "b": [1, {"x": 1, "y": 2}]});
        assert_eq!(canonical(&a), canonical(&b));
        assert_ne!(
            canonical(&b),
            canonical(&json!({"a": "z", "b": [{"x": 1, "y": 2}, 1]}))
        );
        assert_ne!(canonical(&json!({"a": "1"})), canonical(&json!({"a": 1})));
        let serde_json::Value::Object(map) = b.clone() else {
            unreachable!()
        };
        assert_eq!(canonical_object(&map), canonical(&b));
    }
}
