//! A small streaming JSON reader for the data packages' files (`{"data": [row, row, …]}`).
//!
//! It hands each element of the top-level `"data"` array to a callback as soon as it is parsed, so
//! a 16 MB file never becomes a 200 MB tree. It accepts standard JSON, rejects everything else with
//! a byte offset, and limits nesting so that no input can overflow the stack. (serde_json is not
//! used in the library: linking it adds `PartialEq<serde_json::Value>` impls for integers, which
//! breaks type inference in unrelated code such as `assert_eq!(vec_of_usize, Vec::new())`.)

/// Deepest nesting accepted inside one element of the data array.
const MAX_DEPTH: usize = 32;

/// A parsed JSON value; only what validation needs is kept.
#[derive(Debug, PartialEq)]
pub(crate) enum Json<'a> {
    /// A non-negative integer literal that fits in `u64` (no fraction, no exponent).
    Int(u64),
    /// Any other number, as written.
    Num(&'a str),
    /// A string (contents dropped).
    Str,
    /// `true`, `false` or `null`.
    Literal(&'a str),
    /// An array.
    Array(Vec<Json<'a>>),
    /// An object (contents dropped).
    Object,
}

impl std::fmt::Display for Json<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Json::Int(v) => write!(f, "{v}"),
            Json::Num(s) | Json::Literal(s) => f.write_str(s),
            Json::Str => f.write_str("a string"),
            Json::Array(items) => write!(f, "an array of {}", items.len()),
            Json::Object => f.write_str("an object"),
        }
    }
}

/// Parses `{"KEY": [e0, e1, …], …}` and calls `each(index, element)` for every element of KEY's array.
/// Other keys are parsed and ignored; a missing KEY, or anything that is not JSON, is an error.
pub(crate) fn for_each_in_array<'a>(
    text: &'a [u8],
    key: &str,
    mut each: impl FnMut(usize, Json<'a>),
) -> Result<(), String> {
    let mut r = Reader { b: text, pos: 0 };
    let mut found = false;
    r.expect(b'{')?;
    if r.peek() == Some(b'}') {
        r.pos += 1;
    } else {
        loop {
            let name = r.string()?;
            r.expect(b':')?;
            if name == key.as_bytes() && r.peek() == Some(b'[') {
                found = true;
                r.pos += 1;
                let mut index = 0;
                if r.peek() == Some(b']') {
                    r.pos += 1;
                } else {
                    loop {
                        each(index, r.value(1)?);
                        index += 1;
                        if r.separator(b']')? {
                            break;
                        }
                    }
                }
            } else {
                r.value(0)?;
            }
            if r.separator(b'}')? {
                break;
            }
        }
    }
    if r.peek().is_some() {
        return Err(format!("unexpected text after the JSON value at byte {}", r.pos));
    }
    if !found {
        return Err(format!("expected an object with a \"{key}\" array, found none"));
    }
    Ok(())
}

struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn peek(&mut self) -> Option<u8> {
        while self.b.get(self.pos).is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
        self.b.get(self.pos).copied()
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(format!("invalid JSON: expected '{}' at byte {}", c as char, self.pos))
        }
    }

    /// After an element: `,` → `false` (more follow), `close` → `true` (done).
    fn separator(&mut self, close: u8) -> Result<bool, String> {
        match self.peek() {
            Some(b',') => {
                self.pos += 1;
                Ok(false)
            }
            Some(c) if c == close => {
                self.pos += 1;
                Ok(true)
            }
            _ => Err(format!("invalid JSON: expected ',' or '{}' at byte {}", close as char, self.pos)),
        }
    }

    /// A string's raw bytes between the quotes (escapes are skipped, not decoded).
    fn string(&mut self) -> Result<&'a [u8], String> {
        self.expect(b'"')?;
        let start = self.pos;
        loop {
            match self.b.get(self.pos) {
                None => return Err(format!("invalid JSON: unterminated string starting at byte {start}")),
                Some(b'"') => break,
                Some(b'\\') => self.pos += 2,
                Some(_) => self.pos += 1,
            }
        }
        self.pos += 1;
        Ok(&self.b[start..self.pos - 1])
    }

    fn value(&mut self, depth: usize) -> Result<Json<'a>, String> {
        if depth > MAX_DEPTH {
            return Err(format!("invalid JSON: nested deeper than {MAX_DEPTH} at byte {}", self.pos));
        }
        match self.peek() {
            Some(b'"') => self.string().map(|_| Json::Str),
            Some(b'[') => {
                self.pos += 1;
                let mut items = Vec::new();
                if self.peek() == Some(b']') {
                    self.pos += 1;
                    return Ok(Json::Array(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    if self.separator(b']')? {
                        return Ok(Json::Array(items));
                    }
                }
            }
            Some(b'{') => {
                self.pos += 1;
                if self.peek() == Some(b'}') {
                    self.pos += 1;
                    return Ok(Json::Object);
                }
                loop {
                    self.string()?;
                    self.expect(b':')?;
                    self.value(depth + 1)?;
                    if self.separator(b'}')? {
                        return Ok(Json::Object);
                    }
                }
            }
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => {
                for word in ["true", "false", "null"] {
                    if self.b[self.pos..].starts_with(word.as_bytes()) {
                        self.pos += word.len();
                        return Ok(Json::Literal(word));
                    }
                }
                Err(format!("invalid JSON: unexpected character at byte {}", self.pos))
            }
        }
    }

    fn number(&mut self) -> Result<Json<'a>, String> {
        let start = self.pos;
        let digits = |r: &mut Self| {
            let s = r.pos;
            while r.b.get(r.pos).is_some_and(u8::is_ascii_digit) {
                r.pos += 1;
            }
            r.pos > s
        };
        let negative = self.b.get(self.pos) == Some(&b'-');
        self.pos += usize::from(negative);
        let mut ok = digits(self);
        let mut integer = !negative;
        if self.b.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            ok &= digits(self);
            integer = false;
        }
        if matches!(self.b.get(self.pos), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(self.b.get(self.pos), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            ok &= digits(self);
            integer = false;
        }
        // Every byte in start..pos is ASCII, so this cannot fail.
        let text = std::str::from_utf8(&self.b[start..self.pos]).unwrap_or("");
        if !ok {
            return Err(format!("invalid JSON: malformed number at byte {start}"));
        }
        Ok(match text.parse::<u64>() {
            Ok(v) if integer => Json::Int(v),
            _ => Json::Num(text),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(text: &str) -> Result<Vec<String>, String> {
        let mut out = Vec::new();
        for_each_in_array(text.as_bytes(), "data", |i, v| out.push(format!("{i}:{v}")))?;
        Ok(out)
    }

    #[test]
    fn streams_the_data_array() {
        let got = rows(r#" {"meta": {"a": [1, "x\"y"]}, "data": [[1,2,3], [], 7, -1.5e3, "s", null, {"k": 1}] } "#);
        let want = ["0:an array of 3", "1:an array of 0", "2:7", "3:-1.5e3", "4:a string", "5:null", "6:an object"];
        assert_eq!(got.unwrap(), want);
        assert_eq!(rows(r#"{"data": []}"#).unwrap(), Vec::<String>::new());
        let mut first = None;
        for_each_in_array(br#"{"data":[[0,255,3.0,256,18446744073709551616]]}"#, "data", |_, v| first = Some(v))
            .unwrap();
        let Some(Json::Array(items)) = first else { panic!("not an array") };
        assert_eq!(
            items,
            [Json::Int(0), Json::Int(255), Json::Num("3.0"), Json::Int(256), Json::Num("18446744073709551616")]
        );
    }

    #[test]
    fn rejects_malformed_json() {
        for bad in [
            "",
            "[]",
            "{}",
            r#"{"other": 1}"#,
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
        let deep = format!(r#"{{"data": [{}{}]}}"#, "[".repeat(100), "]".repeat(100));
        assert!(rows(&deep).unwrap_err().contains("nested deeper"));
    }
}
