//! Safetensors: round trips, a byte-exact file written by hand from the format spec, and hostile
//! input (every truncation, seeded random mutations, absurd header lengths, bad offsets).

use super::*;

fn sample() -> SafeTensors {
    SafeTensors {
        tensors: vec![
            NamedTensor::from_u32("z.counts", vec![3], &[0, 7, u32::MAX]),
            NamedTensor::from_f32("conv1.weight", vec![2, 1, 1, 2], &[1.5, -0.0, f32::MIN_POSITIVE, 3e9]),
            NamedTensor::from_u8("mask", vec![5], &[0, 1, 2, 254, 255]),
            NamedTensor::from_i64("step", vec![], &[-42]),
            NamedTensor::from_f32("empty", vec![0, 3], &[]),
        ],
        metadata: vec![("format".into(), "fdsr-checkpoint".into()), ("note \"q\"\n".into(), "é\\\u{1}".into())],
    }
}

fn err(bytes: &[u8]) -> String {
    match SafeTensors::from_bytes(bytes) {
        Ok(st) => panic!("accepted {st:?}"),
        Err(e) => e.to_string(),
    }
}

/// A file with this header text (unpadded) and these data bytes.
fn file(header: &str, data: &[u8]) -> Vec<u8> {
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

#[test]
fn round_trips_every_dtype_and_the_metadata() {
    let st = sample();
    let bytes = st.to_bytes().unwrap();
    let len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    assert_eq!(len % 8, 0, "header padded to a multiple of 8");
    let back = SafeTensors::from_bytes(&bytes).unwrap();
    let mut want = st.tensors.clone();
    want.sort_by(|a, b| a.name.cmp(&b.name));
    assert_eq!(back.tensors, want, "sorted by name");
    assert_eq!(back.metadata, st.metadata);
    assert_eq!(back.f32("conv1.weight").unwrap(), vec![1.5, -0.0, f32::MIN_POSITIVE, 3e9]);
    assert_eq!(back.u32("z.counts").unwrap(), vec![0, 7, u32::MAX]);
    assert_eq!(back.i64("step").unwrap(), vec![-42]);
    assert_eq!(back.get("mask").unwrap().data, vec![0, 1, 2, 254, 255]);
    assert_eq!(back.meta("note \"q\"\n"), Some("é\\\u{1}"));
    assert_eq!(back.meta("nope"), None);
    assert!(back.f32("mask").unwrap_err().to_string().contains("\"mask\" is U8, not F32"));
    assert!(back.f32("missing").unwrap_err().to_string().contains("no tensor \"missing\""));
    assert_eq!(back.to_bytes().unwrap(), bytes, "writing is deterministic");
    assert_eq!(SafeTensors::default().to_bytes().unwrap(), file("{}      ", &[]));
}

#[test]
fn writes_a_known_good_file_byte_for_byte() {
    // By hand from the spec: header `{"a":…,"b":…}` sorted by name, offsets contiguous, padded to
    // 80 bytes with 6 spaces, then a's 4 bytes (F32 1.0) and b's 2 bytes.
    let header = r#"{"__metadata__":{"k":"v"},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[2],"data_offsets":[4,6]}}"#;
    let padded = format!("{header}{}", " ".repeat(8 - header.len() % 8));
    assert_eq!(padded.len() % 8, 0);
    let want = file(&padded, &[0, 0, 0x80, 0x3f, 9, 8]);
    let st = SafeTensors {
        tensors: vec![NamedTensor::from_u8("b", vec![2], &[9, 8]), NamedTensor::from_f32("a", vec![1], &[1.0])],
        metadata: vec![("k".into(), "v".into())],
    };
    assert_eq!(st.to_bytes().unwrap(), want);
    // The reference implementation's spacing and key order are accepted too.
    let loose = r#"{ "b": {"shape": [2], "dtype": "U8", "data_offsets": [4, 6]}, "a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "__metadata__": {"k": "v"} }"#;
    let back = SafeTensors::from_bytes(&file(loose, &[0, 0, 0x80, 0x3f, 9, 8])).unwrap();
    assert_eq!(back, SafeTensors::from_bytes(&want).unwrap());
    assert_eq!(back.f32("a").unwrap(), vec![1.0]);
}

#[test]
fn writer_rejects_inconsistent_input() {
    let mut st = sample();
    st.tensors.push(NamedTensor::from_u8("mask", vec![1], &[0]));
    assert!(st.to_bytes().unwrap_err().to_string().contains("duplicate tensor name \"mask\""));
    let mut st = sample();
    st.tensors[0].shape = vec![4];
    assert!(st.to_bytes().unwrap_err().to_string().contains("12 bytes of data, but U32 [4] needs 16"));
    let mut st = sample();
    st.tensors[0].shape = vec![usize::MAX, 2];
    assert!(st.to_bytes().unwrap_err().to_string().contains("more than fits"));
    let mut st = sample();
    st.metadata.push(("format".into(), "x".into()));
    assert!(st.to_bytes().unwrap_err().to_string().contains("duplicate metadata key \"format\""));
    let st = SafeTensors { tensors: vec![NamedTensor::from_u8(METADATA_KEY, vec![1], &[0])], metadata: vec![] };
    assert!(st.to_bytes().is_err());
}

#[test]
fn every_truncation_is_an_error() {
    let bytes = sample().to_bytes().unwrap();
    for n in 0..bytes.len() {
        let e = err(&bytes[..n]);
        assert!(e.contains("truncated") || e.contains("header"), "{n}: {e}");
    }
    let mut long = bytes.clone();
    long.push(0);
    assert!(err(&long).contains("1 unexpected bytes after"));
}

#[test]
fn hostile_header_lengths_and_offsets_are_errors() {
    assert!(err(&u64::MAX.to_le_bytes()).contains("more than the 100000000 bytes allowed"));
    assert!(err(&(MAX_HEADER_LEN + 1).to_le_bytes()).contains("more than"));
    assert!(err(&MAX_HEADER_LEN.to_le_bytes()).contains("truncated: the header needs 100000000 bytes"));
    let t = |offsets: &str, shape: &str, dtype: &str| {
        format!(r#"{{"t":{{"dtype":"{dtype}","shape":{shape},"data_offsets":{offsets}}}}}"#)
    };
    let cases = [
        (t("[0,4]", "[1]", "F16"), 4, "unsupported dtype \"F16\""),
        (t("[0,4]", "[2]", "F32"), 4, "hold 4 bytes, but F32 [2] needs 8"),
        (t("[0,8]", "[2]", "F32"), 4, "truncated: tensor \"t\" needs data bytes [0, 8)"),
        (t("[2,6]", "[1]", "F32"), 6, "leaves a gap"),
        (t("[4,0]", "[1]", "F32"), 4, "leaves a gap"),
        (t("[0]", "[1]", "F32"), 4, "not [begin, end]"),
        (t("[0,18446744073709551616]", "[1]", "F32"), 4, "not [begin, end]"),
        (t("[0,4]", "[-1]", "F32"), 4, "not an array of non-negative integers"),
        (t("[0,4]", "[1.0]", "F32"), 4, "not an array of non-negative integers"),
        (t("[0,4]", "[18446744073709551615,2]", "F32"), 4, "too large"),
        (r#"{"t":{"dtype":"F32","shape":[1]}}"#.into(), 4, "needs dtype, shape and data_offsets"),
        (r#"{"t":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}}"#.into(), 4, "unknown key \"x\""),
        (r#"{"t":[1]}"#.into(), 0, "not an object"),
        (r#"{"t":{"dtype":7,"shape":[1],"data_offsets":[0,4]}}"#.into(), 4, "dtype is 7"),
        (r#"{"__metadata__":{"k":1}}"#.into(), 0, "entry \"k\" is 1, not a string"),
        (r#"{"__metadata__":[]}"#.into(), 0, "not an object of strings"),
        (r#"{"a":1,"a":2}"#.into(), 0, "duplicate key \"a\""),
        (r#"{"a":}"#.into(), 0, "invalid JSON"),
        ("[]".into(), 0, "does not start with '{'"),
        (" {}".into(), 0, "does not start with '{'"),
    ];
    for (header, data_len, want) in cases {
        let e = err(&file(&header, &vec![0; data_len]));
        assert!(e.contains(want), "{header}: {e}");
    }
    let two =
        r#"{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}}"#;
    assert!(err(&file(two, &[0; 6])).contains("overlaps the previous tensor"));
}

#[test]
fn seeded_random_mutations_never_panic() {
    let good = sample().to_bytes().unwrap();
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut accepted = 0;
    for _ in 0..20_000 {
        let mut bytes = good.clone();
        for _ in 0..1 + next() % 4 {
            let i = (next() % bytes.len() as u64) as usize;
            match next() % 3 {
                0 => bytes[i] = next() as u8,
                1 => bytes[i] ^= 1 << (next() % 8),
                _ => bytes[i] = b"{}[]\",:0 9-"[(next() % 11) as usize],
            }
        }
        if let Ok(st) = SafeTensors::from_bytes(&bytes) {
            accepted += 1;
            // Whatever is accepted is self-consistent: it writes and reads back to the same tensors.
            let again = SafeTensors::from_bytes(&st.to_bytes().unwrap()).unwrap();
            assert_eq!(again.tensors, st.tensors);
        }
    }
    assert!(accepted < 20_000);
}
