//! The data packages' JSON files (`{"data": [row, row, …]}`), read with serde_json as a stream.
//!
//! Each element of the top-level `"data"` array is handed to a callback as soon as serde_json has
//! parsed it, so a 16 MB file never becomes a 200 MB tree. Other keys are skipped without building
//! anything; anything that is not JSON is an error with serde_json's line and column, and its
//! recursion limit keeps hostile nesting from overflowing the stack.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// Parses `{"KEY": [e0, e1, …], …}` and calls `each(index, element)` for every element of KEY's array.
/// Other keys are parsed and ignored; a missing KEY, or anything that is not JSON, is an error.
pub(crate) fn for_each_in_array(text: &[u8], key: &str, each: impl FnMut(usize, Value)) -> Result<(), String> {
    let mut de = serde_json::Deserializer::from_slice(text);
    let found = de.deserialize_map(Top { key, each }).map_err(explain)?;
    de.end().map_err(explain)?;
    if found {
        Ok(())
    } else {
        Err(format!("the file has no \"{key}\" array"))
    }
}

/// serde_json's error, saying whether the text is not JSON or JSON of another shape.
fn explain(e: serde_json::Error) -> String {
    match e.classify() {
        serde_json::error::Category::Data => format!("unexpected JSON: {e}"),
        _ => format!("invalid JSON: {e}"),
    }
}

/// A short description of a value for messages: numbers and literals as they are, otherwise the kind.
pub(crate) fn describe(v: &Value) -> String {
    match v {
        Value::String(_) => "a string".into(),
        Value::Array(items) => format!("an array of {}", items.len()),
        Value::Object(_) => "an object".into(),
        other => other.to_string(),
    }
}

/// The top-level object: finds KEY, streams its array, skips the rest. Yields whether KEY was seen.
struct Top<'k, F> {
    key: &'k str,
    each: F,
}

impl<'de, F: FnMut(usize, Value)> Visitor<'de> for Top<'_, F> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an object with a \"{}\" array", self.key)
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<bool, A::Error> {
        let mut found = false;
        while let Some(name) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if name == self.key && !found {
                map.next_value_seed(Elements(&mut self.each))?;
                found = true;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// KEY's array, element by element.
struct Elements<'a, F>(&'a mut F);

impl<'de, F: FnMut(usize, Value)> DeserializeSeed<'de> for Elements<'_, F> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, F: FnMut(usize, Value)> Visitor<'de> for Elements<'_, F> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0;
        while let Some(value) = seq.next_element::<Value>()? {
            (self.0)(index, value);
            index += 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(text: &str) -> Result<Vec<String>, String> {
        let mut out = Vec::new();
        for_each_in_array(text.as_bytes(), "data", |i, v| out.push(format!("{i}:{}", describe(&v))))?;
        Ok(out)
    }

    #[test]
    fn streams_the_data_array() {
        let got = rows(r#" {"meta": {"a": [1, "x\"y"]}, "data": [[1,2,3], [], 7, -1.5e3, "s", null, {"k": 1}] } "#);
        let want = ["0:an array of 3", "1:an array of 0", "2:7", "3:-1500.0", "4:a string", "5:null", "6:an object"];
        assert_eq!(got.unwrap(), want);
        assert_eq!(rows(r#"{"data": []}"#).unwrap(), Vec::<String>::new());
        let mut first = None;
        for_each_in_array(br#"{"data":[[0,255,3.0,256,18446744073709551616]]}"#, "data", |_, v| first = Some(v))
            .unwrap();
        let Some(Value::Array(items)) = first else { panic!("not an array") };
        let ints: Vec<Option<u64>> = items.iter().map(Value::as_u64).collect();
        assert_eq!(ints, [Some(0), Some(255), None, Some(256), None], "3.0 and 2^64 are not u64 integers");
    }

    #[test]
    fn rejects_malformed_json() {
        for bad in [
            "",
            "[]",
            "{}",
            r#"{"other": 1}"#,
            r#"{"data": 1}"#,
            r#"{"data": [1, 2"#,
            r#"{"data": [1 2]}"#,
            r#"{"data": [01x]}"#,
            r#"{"data": [-]}"#,
            r#"{"data": [1.]}"#,
            r#"{"data": ["unterminated]}"#,
            r#"{"data": []} trailing"#,
            r#"{"data": [tru]}"#,
        ] {
            assert!(rows(bad).is_err(), "accepted {bad:?}");
        }
        assert!(rows(r#"{"other": 1}"#).unwrap_err().contains("no \"data\" array"));
        assert!(rows(r#"{"data": [1 2]}"#).unwrap_err().contains("invalid JSON: expected `,` or `]` at line 1 column"));
        assert!(rows(r#"{"data": 1}"#)
            .unwrap_err()
            .contains("unexpected JSON: invalid type: integer `1`, expected an array"));
        let deep = format!(r#"{{"data": [{}{}]}}"#, "[".repeat(1000), "]".repeat(1000));
        assert!(rows(&deep).unwrap_err().contains("recursion limit"));
    }
}
