//! Numbers JSON cannot carry: `serde_json` writes a NaN or an infinity as `null`, which a
//! client would read as a value the handler never returned (and which breaks an output
//! schema that says `number`). A handler's output that holds `null` is walked once more by
//! a serializer that writes nothing and stops at the first non-finite float, with its place.

use std::fmt;

use serde::ser::{self, Serialize};
use serde_json::Value;

/// Where in `output` (already serialized as `json`) a NaN or an infinity stands, as a JSON
/// pointer; `None` when there is none. Outputs without a `null` are not walked again.
pub(crate) fn non_finite<T: Serialize + ?Sized>(output: &T, json: &Value) -> Option<String> {
    if !holds_null(json) {
        return None;
    }
    let mut walk = Walk { path: Vec::new() };
    match output.serialize(&mut walk) {
        Err(NonFinite(Some(at))) => Some(at),
        _ => None,
    }
}

fn holds_null(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Array(items) => items.iter().any(holds_null),
        Value::Object(map) => map.values().any(holds_null),
        _ => false,
    }
}

/// The walk's stop: the pointer of the first non-finite float (`None` for serde's own
/// errors, which the first serialization already reported).
#[derive(Debug)]
struct NonFinite(Option<String>);

impl fmt::Display for NonFinite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a non-finite number")
    }
}

impl std::error::Error for NonFinite {}

impl ser::Error for NonFinite {
    fn custom<M: fmt::Display>(_: M) -> Self {
        Self(None)
    }
}

/// A serializer that writes nothing and keeps the path it is at.
struct Walk {
    path: Vec<String>,
}

impl Walk {
    fn float(&self, value: f64) -> Result<(), NonFinite> {
        if value.is_finite() {
            return Ok(());
        }
        let pointer = self
            .path
            .iter()
            .map(|part| format!("/{}", part.replace('~', "~0").replace('/', "~1")))
            .collect();
        Err(NonFinite(Some(pointer)))
    }

    fn at<T: Serialize + ?Sized>(&mut self, part: String, value: &T) -> Result<(), NonFinite> {
        self.path.push(part);
        let walked = value.serialize(&mut *self);
        self.path.pop();
        walked
    }
}

/// Counts the elements of a sequence or a tuple, for their place.
struct Items<'a> {
    walk: &'a mut Walk,
    next: usize,
}

impl Items<'_> {
    fn item<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), NonFinite> {
        let at = self.next;
        self.next += 1;
        self.walk.at(at.to_string(), value)
    }
}

/// A map's entries: the key, as text, names the place of its value.
struct Entries<'a> {
    walk: &'a mut Walk,
    key: String,
}

macro_rules! nothing {
    ($($method:ident($($ty:ty),*);)*) => {
        $(fn $method(self, $(_: $ty),*) -> Result<(), NonFinite> { Ok(()) })*
    };
}

impl<'a> ser::Serializer for &'a mut Walk {
    type Ok = ();
    type Error = NonFinite;
    type SerializeSeq = Items<'a>;
    type SerializeTuple = Items<'a>;
    type SerializeTupleStruct = Items<'a>;
    type SerializeTupleVariant = Items<'a>;
    type SerializeMap = Entries<'a>;
    type SerializeStruct = Entries<'a>;
    type SerializeStructVariant = Entries<'a>;

    nothing! {
        serialize_bool(bool);
        serialize_i8(i8);
        serialize_i16(i16);
        serialize_i32(i32);
        serialize_i64(i64);
        serialize_i128(i128);
        serialize_u8(u8);
        serialize_u16(u16);
        serialize_u32(u32);
        serialize_u64(u64);
        serialize_u128(u128);
        serialize_char(char);
        serialize_str(&str);
        serialize_bytes(&[u8]);
        serialize_none();
        serialize_unit();
        serialize_unit_struct(&'static str);
        serialize_unit_variant(&'static str, u32, &'static str);
    }

    fn serialize_f32(self, value: f32) -> Result<(), NonFinite> {
        self.float(f64::from(value))
    }

    fn serialize_f64(self, value: f64) -> Result<(), NonFinite> {
        self.float(value)
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), NonFinite> {
        value.serialize(self)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), NonFinite> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), NonFinite> {
        self.at(variant.to_owned(), value)
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Items<'a>, NonFinite> {
        Ok(Items {
            walk: self,
            next: 0,
        })
    }

    fn serialize_tuple(self, _: usize) -> Result<Items<'a>, NonFinite> {
        self.serialize_seq(None)
    }

    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Items<'a>, NonFinite> {
        self.serialize_seq(None)
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Items<'a>, NonFinite> {
        self.path.push(variant.to_owned());
        self.serialize_seq(None)
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Entries<'a>, NonFinite> {
        Ok(Entries {
            walk: self,
            key: String::new(),
        })
    }

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Entries<'a>, NonFinite> {
        self.serialize_map(None)
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Entries<'a>, NonFinite> {
        self.path.push(variant.to_owned());
        self.serialize_map(None)
    }
}

/// A sequence's elements, a tuple's, a tuple struct's: each at its index.
macro_rules! items {
    ($($serialize:ident::$element:ident),*) => {$(
        impl ser::$serialize for Items<'_> {
            type Ok = ();
            type Error = NonFinite;
            fn $element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), NonFinite> {
                self.item(value)
            }
            fn end(self) -> Result<(), NonFinite> {
                Ok(())
            }
        }
    )*};
}

items!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field
);

impl ser::SerializeTupleVariant for Items<'_> {
    type Ok = ();
    type Error = NonFinite;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), NonFinite> {
        self.item(value)
    }
    fn end(self) -> Result<(), NonFinite> {
        self.walk.path.pop();
        Ok(())
    }
}

impl ser::SerializeMap for Entries<'_> {
    type Ok = ();
    type Error = NonFinite;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), NonFinite> {
        // A key as JSON writes it: a string as is, anything else as its JSON.
        self.key = match serde_json::to_value(key) {
            Ok(Value::String(key)) => key,
            Ok(other) => other.to_string(),
            Err(_) => String::new(),
        };
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), NonFinite> {
        let key = std::mem::take(&mut self.key);
        self.walk.at(key, value)
    }
    fn end(self) -> Result<(), NonFinite> {
        Ok(())
    }
}

impl ser::SerializeStruct for Entries<'_> {
    type Ok = ();
    type Error = NonFinite;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), NonFinite> {
        self.walk.at(key.to_owned(), value)
    }
    fn end(self) -> Result<(), NonFinite> {
        Ok(())
    }
}

impl ser::SerializeStructVariant for Entries<'_> {
    type Ok = ();
    type Error = NonFinite;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), NonFinite> {
        self.walk.at(key.to_owned(), value)
    }
    fn end(self) -> Result<(), NonFinite> {
        self.walk.path.pop();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::non_finite;
    use serde_json::json;
    use std::collections::BTreeMap;

    #[derive(serde::Serialize)]
    struct Reading {
        name: String,
        values: Vec<Option<f64>>,
    }

    #[test]
    fn a_non_finite_float_is_found_with_its_place() {
        let reading = Reading {
            name: "a".into(),
            values: vec![Some(1.0), None, Some(f64::NAN)],
        };
        let json = serde_json::to_value(&reading).unwrap_or_default();
        assert_eq!(non_finite(&reading, &json).as_deref(), Some("/values/2"));
        let fine = Reading {
            name: "a/b".into(),
            values: vec![None],
        };
        let json = serde_json::to_value(&fine).unwrap_or_default();
        assert_eq!(non_finite(&fine, &json), None);
        let map: BTreeMap<&str, f32> = [("x/y", f32::INFINITY)].into();
        let json = serde_json::to_value(map.clone()).unwrap_or_default();
        assert_eq!(non_finite(&map, &json).as_deref(), Some("/x~1y"));
        // No null, no second walk: a finite output is left alone.
        assert_eq!(non_finite(&1.5f64, &json!(1.5)), None);
    }
}
