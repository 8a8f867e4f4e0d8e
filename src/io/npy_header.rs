//! The `.npy` header: magic, version, and the Python dict literal that names dtype, order and shape.
//!
//! A small strict parser instead of a general Python-literal one, so that every malformed header
//! (huge shapes, deep nesting, bad lengths) becomes an error message and never a panic or a huge
//! allocation. Format: <https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html>.
//!
//! Why not `npyz` (the tests' oracle for well-formed files): on a hostile header it does not do
//! this. `npyz 0.9` panics with an arithmetic overflow on `'shape': (2**62, 2**62)` (its element
//! count is not checked; `io::tests` has that header), and its Python-literal parser (`py_literal`
//! on `pest`) pulls `psm`, a C build script that stops the library from type-checking for the
//! Windows and macOS targets — so `npyz` stays a dev-dependency.

/// The six magic bytes every `.npy` file starts with.
pub(crate) const MAGIC: &[u8; 6] = b"\x93NUMPY";
/// Deepest nesting accepted in a header value (structured dtypes nest lists of tuples).
const MAX_DEPTH: usize = 16;

/// Element types that fdsr reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Elem {
    /// IEEE binary32.
    F32,
    /// IEEE binary16.
    F16,
}

impl Elem {
    /// Bytes per element.
    pub(crate) fn size(self) -> usize {
        match self {
            Elem::F32 => 4,
            Elem::F16 => 2,
        }
    }
}

/// What the header says about the data that follows it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Header {
    /// Element type.
    pub elem: Elem,
    /// `true` for big-endian data.
    pub big_endian: bool,
    /// Shape as written (C order).
    pub shape: Vec<usize>,
    /// Offset of the first data byte.
    pub data_offset: usize,
}

/// A value of the header's Python literal (only the kinds numpy writes).
#[derive(Debug)]
enum Value {
    Str(String),
    Bool(bool),
    Int(Option<u64>),
    Seq(Vec<Value>),
}

/// Parses magic, version and header dict; checks dtype and order (shape limits are the caller's).
pub(crate) fn parse(bytes: &[u8]) -> Result<Header, String> {
    if bytes.len() < 8 || &bytes[..6] != MAGIC {
        return Err("not an .npy file (it does not start with the bytes \\x93NUMPY)".into());
    }
    let (major, minor) = (bytes[6], bytes[7]);
    let (len, start) = match major {
        1 => (bytes.get(8..10).map(|b| u16::from_le_bytes([b[0], b[1]]) as usize), 10usize),
        2 | 3 => (bytes.get(8..12).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize), 12),
        _ => return Err(format!("unsupported .npy format version {major}.{minor} (1.0, 2.0 and 3.0 are known)")),
    };
    let len = len.ok_or("truncated .npy header (the file ends inside the header length)")?;
    let end = start.checked_add(len).filter(|&e| e <= bytes.len()).ok_or_else(|| {
        format!(
            "truncated .npy header: it declares {len} bytes but the file has {}",
            bytes.len() - start.min(bytes.len())
        )
    })?;
    let text = std::str::from_utf8(&bytes[start..end]).map_err(|_| "the .npy header is not valid text".to_string())?;
    let mut parser = Parser { text: text.as_bytes(), pos: 0 };
    let entries = parser.dict()?;
    parser.skip_ws();
    if parser.pos != parser.text.len() {
        return Err(format!("unexpected text after the .npy header dict at byte {}", parser.pos));
    }

    let get = |key: &str| {
        entries.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v).ok_or(format!("the .npy header has no '{key}'"))
    };
    let (elem, big_endian) = match get("descr")? {
        Value::Str(s) => dtype(s)?,
        Value::Seq(_) => {
            return Err("unsupported dtype: a structured (record) array; fdsr reads float32 or float16".into())
        }
        other => return Err(format!("malformed .npy header: 'descr' is {other:?}")),
    };
    match get("fortran_order")? {
        Value::Bool(false) => {}
        Value::Bool(true) => {
            return Err("Fortran-order arrays are not supported; save a C-order array (np.ascontiguousarray)".into())
        }
        other => return Err(format!("malformed .npy header: 'fortran_order' is {other:?}")),
    }
    let shape = match get("shape")? {
        Value::Seq(dims) => dims
            .iter()
            .map(|d| match d {
                Value::Int(Some(n)) => usize::try_from(*n).map_err(|_| format!("dimension {n} is too large")),
                Value::Int(None) => Err("a dimension in the .npy shape is too large".to_string()),
                other => Err(format!("malformed .npy shape entry {other:?}")),
            })
            .collect::<Result<Vec<_>, _>>()?,
        other => return Err(format!("malformed .npy header: 'shape' is {other:?}")),
    };
    Ok(Header { elem, big_endian, shape, data_offset: end })
}

/// Maps a numpy type string (`'<f4'`) to an element type, naming unsupported ones.
fn dtype(descr: &str) -> Result<(Elem, bool), String> {
    let unsupported =
        |name: String| Err(format!("unsupported dtype {name} ('{descr}'); fdsr reads float32 or float16"));
    let mut chars = descr.chars();
    let (order, kind) = match (chars.next(), chars.next()) {
        (Some(o @ ('<' | '>' | '|' | '=')), Some(k)) => (o, k),
        _ => return unsupported(descr.to_string()),
    };
    let size: Option<usize> = chars.as_str().parse().ok();
    let name = match (kind, size) {
        ('f', Some(4)) | ('f', Some(2)) => None,
        ('f', Some(n)) => Some(format!("float{}", n * 8)),
        ('i', Some(n)) => Some(format!("int{}", n * 8)),
        ('u', Some(n)) => Some(format!("uint{}", n * 8)),
        ('c', Some(n)) => Some(format!("complex{}", n * 8)),
        ('b', _) => Some("bool".to_string()),
        ('O', _) => Some("object".to_string()),
        ('U' | 'S' | 'a', _) => Some("string".to_string()),
        _ => Some(descr.to_string()),
    };
    if let Some(name) = name {
        return unsupported(name);
    }
    let elem = if size == Some(4) { Elem::F32 } else { Elem::F16 };
    match order {
        '<' => Ok((elem, false)),
        '>' => Ok((elem, true)),
        '=' => Ok((elem, cfg!(target_endian = "big"))),
        _ => unsupported(descr.to_string()),
    }
}

/// Byte-level recursive-descent parser of the header literal.
struct Parser<'a> {
    text: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while self.text.get(self.pos).is_some_and(|c| c.is_ascii_whitespace()) {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.text.get(self.pos).copied()
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        match self.peek() {
            Some(x) if x == c => {
                self.pos += 1;
                Ok(())
            }
            _ => Err(format!("malformed .npy header: expected '{}' at byte {}", c as char, self.pos)),
        }
    }

    fn dict(&mut self) -> Result<Vec<(String, Value)>, String> {
        self.expect(b'{')?;
        let mut entries = Vec::new();
        loop {
            if self.peek() == Some(b'}') {
                self.pos += 1;
                return Ok(entries);
            }
            let key = match self.value(1)? {
                Value::Str(s) => s,
                other => return Err(format!("malformed .npy header: key {other:?} is not a string")),
            };
            self.expect(b':')?;
            entries.push((key, self.value(1)?));
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {}
                _ => return Err(format!("malformed .npy header: expected ',' or '}}' at byte {}", self.pos)),
            }
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err("malformed .npy header: nested too deeply".into());
        }
        match self.peek() {
            Some(q @ (b'\'' | b'"')) => {
                let start = self.pos + 1;
                let len =
                    self.text[start..].iter().position(|&c| c == q).ok_or("unterminated string in .npy header")?;
                self.pos = start + len + 1;
                Ok(Value::Str(String::from_utf8_lossy(&self.text[start..start + len]).into_owned()))
            }
            Some(open @ (b'(' | b'[')) => {
                let close = if open == b'(' { b')' } else { b']' };
                self.pos += 1;
                let mut items = Vec::new();
                loop {
                    if self.peek() == Some(close) {
                        self.pos += 1;
                        return Ok(Value::Seq(items));
                    }
                    items.push(self.value(depth + 1)?);
                    match self.peek() {
                        Some(b',') => self.pos += 1,
                        Some(c) if c == close => {}
                        _ => return Err(format!("malformed .npy header: bad sequence at byte {}", self.pos)),
                    }
                }
            }
            Some(c) if c.is_ascii_digit() => {
                let start = self.pos;
                while self.text.get(self.pos).is_some_and(|c| c.is_ascii_digit()) {
                    self.pos += 1;
                }
                // Python 2 headers may write long integers as `3L`.
                if self.text.get(self.pos) == Some(&b'L') {
                    self.pos += 1;
                }
                let digits = std::str::from_utf8(&self.text[start..self.pos]).unwrap_or("").trim_end_matches('L');
                Ok(Value::Int(digits.parse().ok()))
            }
            Some(b'-') => Err(format!("malformed .npy header: negative number at byte {}", self.pos)),
            _ => {
                for (word, v) in [("True", true), ("False", false)] {
                    if self.text[self.pos..].starts_with(word.as_bytes()) {
                        self.pos += word.len();
                        return Ok(Value::Bool(v));
                    }
                }
                Err(format!("malformed .npy header: unexpected value at byte {}", self.pos))
            }
        }
    }
}

/// The header of a little-endian float32 C-order array of `shape`, padded so that data starts on a
/// 64-byte boundary (format version 1.0, or 2.0 when the dict does not fit in 65535 bytes).
pub(crate) fn encode_f32(shape: &[usize]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape_text = if dims.len() == 1 { format!("({},)", dims[0]) } else { format!("({})", dims.join(", ")) };
    let mut dict = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape_text}, }}");
    let padded = |prefix: usize| (prefix + dict.len() + 1).div_ceil(64) * 64;
    let (version, prefix) = if padded(10) - 10 <= usize::from(u16::MAX) { (1u8, 10) } else { (2u8, 12) };
    let total = padded(prefix);
    dict.extend(std::iter::repeat_n(' ', total - prefix - dict.len() - 1));
    dict.push('\n');
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[version, 0]);
    if version == 1 {
        out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(dict.len() as u32).to_le_bytes());
    }
    out.extend_from_slice(dict.as_bytes());
    out
}
