//! The JSON of a safetensors header: a strict little parser into a value tree, and string escaping
//! for the writer.
//!
//! It accepts standard JSON only (RFC 8259: no trailing commas, no comments, escapes decoded,
//! surrogate pairs checked), rejects duplicate object keys, limits nesting so that no input can
//! overflow the stack, and reports every problem with its byte offset. Numbers are kept as written;
//! the caller reads the integers it needs with [`Value::as_u64`]. (It is separate from the data
//! packages' streaming reader, which drops strings, and compiles on wasm32.)

/// Deepest nesting accepted (a safetensors header needs 3).
const MAX_DEPTH: usize = 16;

/// A parsed JSON value.
#[derive(Debug, PartialEq)]
pub(crate) enum Value {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, as written.
    Num(String),
    /// A string, decoded.
    Str(String),
    /// An array.
    Arr(Vec<Value>),
    /// An object, keys in file order (no duplicates).
    Obj(Vec<(String, Value)>),
}

impl Value {
    /// The value as a non-negative integer literal that fits in `u64`.
    pub(crate) fn as_u64(&self) -> Option<u64> {
        match self {
            Value::Num(s) if s.bytes().all(|b| b.is_ascii_digit()) => s.parse().ok(),
            _ => None,
        }
    }

    /// A short description for error messages.
    pub(crate) fn describe(&self) -> String {
        match self {
            Value::Null => "null".into(),
            Value::Bool(b) => b.to_string(),
            Value::Num(s) => s.clone(),
            Value::Str(s) => format!("{s:?}"),
            Value::Arr(a) => format!("an array of {}", a.len()),
            Value::Obj(_) => "an object".into(),
        }
    }
}

/// Parses one JSON value that fills `text` (whitespace around it allowed).
pub(crate) fn parse(text: &[u8]) -> Result<Value, String> {
    let mut r = Reader { b: text, pos: 0 };
    let v = r.value(0)?;
    if r.peek().is_some() {
        return Err(format!("unexpected text after the JSON value at byte {}", r.pos));
    }
    Ok(v)
}

/// Appends `s` as a JSON string literal (quotes, `"` `\` and control characters escaped).
pub(crate) fn write_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
}

struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn peek(&mut self) -> Option<u8> {
        while self.b.get(self.pos).is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
        self.b.get(self.pos).copied()
    }

    fn err<T>(&self, what: &str) -> Result<T, String> {
        Err(format!("invalid JSON: {what} at byte {}", self.pos))
    }

    fn value(&mut self, depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return self.err(&format!("nested deeper than {MAX_DEPTH}"));
        }
        match self.peek() {
            Some(b'"') => self.string().map(Value::Str),
            Some(b'[') => {
                self.pos += 1;
                let mut items = Vec::new();
                if self.peek() == Some(b']') {
                    self.pos += 1;
                    return Ok(Value::Arr(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    if self.separator(b']')? {
                        return Ok(Value::Arr(items));
                    }
                }
            }
            Some(b'{') => {
                self.pos += 1;
                let mut fields: Vec<(String, Value)> = Vec::new();
                if self.peek() == Some(b'}') {
                    self.pos += 1;
                    return Ok(Value::Obj(fields));
                }
                loop {
                    if self.peek() != Some(b'"') {
                        return self.err("expected a string key");
                    }
                    let at = self.pos;
                    let key = self.string()?;
                    if fields.iter().any(|(k, _)| *k == key) {
                        return Err(format!("invalid JSON: duplicate key {key:?} at byte {at}"));
                    }
                    if self.peek() != Some(b':') {
                        return self.err("expected ':'");
                    }
                    self.pos += 1;
                    let v = self.value(depth + 1)?;
                    fields.push((key, v));
                    if self.separator(b'}')? {
                        return Ok(Value::Obj(fields));
                    }
                }
            }
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => {
                for (word, v) in [("true", Value::Bool(true)), ("false", Value::Bool(false)), ("null", Value::Null)] {
                    if self.b.get(self.pos..).is_some_and(|rest| rest.starts_with(word.as_bytes())) {
                        self.pos += word.len();
                        return Ok(v);
                    }
                }
                self.err("unexpected character")
            }
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
            _ => self.err(&format!("expected ',' or '{}'", close as char)),
        }
    }

    /// A string literal (the reader is on its opening quote), decoded.
    fn string(&mut self) -> Result<String, String> {
        let start = self.pos;
        self.pos += 1;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let Some(&c) = self.b.get(self.pos) else {
                return Err(format!("invalid JSON: unterminated string starting at byte {start}"));
            };
            self.pos += 1;
            match c {
                b'"' => break,
                b'\\' => {
                    let Some(&e) = self.b.get(self.pos) else { continue };
                    self.pos += 1;
                    let ch = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => self.unicode_escape()?,
                        _ => return self.err("invalid escape"),
                    };
                    out.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
                }
                0..=0x1f => return self.err("control character in a string"),
                _ => out.push(c),
            }
        }
        String::from_utf8(out).map_err(|_| format!("invalid JSON: the string at byte {start} is not UTF-8"))
    }

    /// The character of `\uXXXX` (or a surrogate pair `\uD8XX\uDCXX`); the reader is past the `u`.
    fn unicode_escape(&mut self) -> Result<char, String> {
        let hi = self.hex4()?;
        let code = if (0xD800..0xDC00).contains(&hi) {
            if self.b.get(self.pos..self.pos + 2) != Some(b"\\u") {
                return self.err("unpaired surrogate escape");
            }
            self.pos += 2;
            let lo = self.hex4()?;
            if !(0xDC00..0xE000).contains(&lo) {
                return self.err("unpaired surrogate escape");
            }
            0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
        } else {
            hi
        };
        match char::from_u32(code) {
            Some(c) => Ok(c),
            None => self.err("unpaired surrogate escape"),
        }
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let digits = self.b.get(self.pos..self.pos + 4).and_then(|h| std::str::from_utf8(h).ok());
        match digits.filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit())).map(|h| u32::from_str_radix(h, 16)) {
            Some(Ok(v)) => {
                self.pos += 4;
                Ok(v)
            }
            _ => self.err("invalid \\u escape"),
        }
    }

    fn number(&mut self) -> Result<Value, String> {
        let start = self.pos;
        let digits = |r: &mut Self| {
            let s = r.pos;
            while r.b.get(r.pos).is_some_and(u8::is_ascii_digit) {
                r.pos += 1;
            }
            r.pos - s
        };
        self.pos += usize::from(self.b.get(self.pos) == Some(&b'-'));
        let int_start = self.pos;
        let n = digits(self);
        let mut ok = n > 0 && !(n > 1 && self.b.get(int_start) == Some(&b'0'));
        if self.b.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            ok &= digits(self) > 0;
        }
        if matches!(self.b.get(self.pos), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(self.b.get(self.pos), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            ok &= digits(self) > 0;
        }
        if !ok {
            return Err(format!("invalid JSON: malformed number at byte {start}"));
        }
        // Every byte in start..pos is ASCII.
        Ok(Value::Num(String::from_utf8_lossy(&self.b[start..self.pos]).into_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_escapes() {
        let v = parse(br#" {"a": [1, -2.5e3, true, null], "b\u00e9\n": "x\"\ud83d\ude00", "c": {}} "#).unwrap();
        let Value::Obj(f) = &v else { panic!("{v:?}") };
        assert_eq!(
            f[0].1,
            Value::Arr(vec![Value::Num("1".into()), Value::Num("-2.5e3".into()), Value::Bool(true), Value::Null])
        );
        assert_eq!(f[1], ("bé\n".into(), Value::Str("x\"😀".into())));
        assert_eq!(f[0].1.describe(), "an array of 4");
        let mut s = String::new();
        write_str(&mut s, "q\"\\\u{1}é");
        assert_eq!(s, r#""q\"\\\u0001é""#);
        let Value::Str(back) = parse(s.as_bytes()).unwrap() else { panic!() };
        assert_eq!(back, "q\"\\\u{1}é");
    }

    #[test]
    fn rejects_what_is_not_strict_json() {
        for bad in [
            "",
            "{",
            "[1,]",
            "{\"a\":1,}",
            "{\"a\" 1}",
            "{a:1}",
            "01",
            "1.",
            "-",
            "\"\\x\"",
            "\"\\ud800\"",
            "\"\\u12\"",
            "\"a\nb\"",
            "{\"a\":1,\"a\":2}",
            "[1] 2",
            "tru",
            "\"open",
        ] {
            assert!(parse(bad.as_bytes()).is_err(), "accepted {bad:?}");
        }
        assert!(parse(&[b'"', 0xff, b'"']).is_err());
        let deep = format!("{}{}", "[".repeat(100), "]".repeat(100));
        assert!(parse(deep.as_bytes()).unwrap_err().contains("nested deeper"));
        assert_eq!(Value::Num("12".into()).as_u64(), Some(12));
        assert_eq!(Value::Num("-1".into()).as_u64(), None);
        assert_eq!(Value::Num("1e3".into()).as_u64(), None);
    }
}
