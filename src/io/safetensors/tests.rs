//! Safetensors: round trips, a byte-exact file written by hand from the format spec, a checkpoint
//! written by fdsr's own writer before it used the crate, and hostile input (every truncation,
//! seeded random mutations, absurd header lengths, bad offsets, unknown dtypes).

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
    let mut meta = st.metadata.clone();
    meta.sort();
    assert_eq!(back.metadata, meta, "sorted by key");
    assert_eq!(back.f32("conv1.weight").unwrap(), vec![1.5, -0.0, f32::MIN_POSITIVE, 3e9]);
    assert_eq!(back.u32("z.counts").unwrap(), vec![0, 7, u32::MAX]);
    assert_eq!(back.i64("step").unwrap(), vec![-42]);
    assert_eq!(back.get("mask").unwrap().data, vec![0, 1, 2, 254, 255]);
    assert_eq!(back.meta("note \"q\"\n"), Some("é\\\u{1}"));
    assert_eq!(back.meta("nope"), None);
    assert!(back.f32("mask").unwrap_err().to_string().contains("\"mask\" is U8, not F32"));
    assert!(back.f32("missing").unwrap_err().to_string().contains("no tensor \"missing\""));
    assert_eq!(SafeTensors::from_bytes(&back.to_bytes().unwrap()).unwrap(), back);
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
    // Other writers' spacing and key order are accepted too.
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
        (t("[0,4]", "[2]", "F16"), 4, "tensor \"t\": unsupported dtype F16 (fdsr reads F32, U32, U8, I64)"),
        (t("[0,4]", "[1]", "Q4"), 4, "unsupported dtype \"Q4\" (fdsr reads F32, U32, U8, I64)"),
        (t("[0,4]", "[2]", "F32"), 4, "do not hold the bytes that its dtype and shape need"),
        (t("[0,8]", "[2]", "F32"), 4, "truncated: the tensors need 8 data bytes, the file has 4"),
        (t("[0,4]", "[1]", "F32"), 6, "2 unexpected bytes after the 4 bytes of tensor data"),
        (t("[2,6]", "[1]", "F32"), 6, "tensor \"t\": data_offsets leave a gap"),
        (t("[4,0]", "[1]", "F32"), 4, "data_offsets leave a gap"),
        (t("[0]", "[1]", "F32"), 4, "header: invalid length 1"),
        (t("[0,18446744073709551616]", "[1]", "F32"), 4, "header: "),
        (t("[0,4]", "[-1]", "F32"), 4, "header: invalid value: integer `-1`"),
        (t("[0,4]", "[1.0]", "F32"), 4, "header: invalid type: floating point"),
        (t("[0,4]", "[18446744073709551615,2]", "F32"), 4, "shape is too large"),
        (r#"{"t":{"dtype":"F32","shape":[1]}}"#.into(), 4, "missing field `data_offsets`"),
        (r#"{"t":[1]}"#.into(), 0, "header: "),
        (r#"{"t":{"dtype":7,"shape":[1],"data_offsets":[0,4]}}"#.into(), 4, "header: invalid type: integer `7`"),
        (r#"{"__metadata__":{"k":1}}"#.into(), 0, "header: invalid type: integer `1`, expected a string"),
        (r#"{"__metadata__":[]}"#.into(), 0, "header: invalid type: sequence"),
        (r#"{"a":}"#.into(), 0, "header: expected value"),
        ("[]".into(), 0, "header: invalid type: sequence"),
    ];
    for (header, data_len, want) in cases {
        let e = err(&file(&header, &vec![0; data_len]));
        assert!(e.contains(want), "{header}: {e}");
    }
    let two =
        r#"{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}}"#;
    assert!(err(&file(two, &[0; 6])).contains("leave a gap or overlap the previous tensor"));
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

/// A `tiny` checkpoint written by fdsr's hand-written writer (commit 1857a6f: synthetic images, seed 9,
/// SGD, `fdsr:budget=2,mask`, controller every 2 steps, saved after step 3) reads the same today.
#[test]
fn reads_a_checkpoint_written_by_the_old_writer() {
    let bytes = include_bytes!("../../../tests/fixtures/tiny-checkpoint-v1.safetensors");
    let st = SafeTensors::from_bytes(bytes).unwrap();
    assert_eq!(st.tensors.len(), 20);
    // FNV-1a over every tensor's name and bytes in name order, as the old reader returned them.
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for t in &st.tensors {
        for b in t.name.bytes().chain(t.data.iter().copied()) {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    assert_eq!(h, 0xc0c1_bc4d_f3fe_71c6);
    assert_eq!(st.meta("format"), Some("fdsr-checkpoint-1"));
    assert_eq!(st.meta("model"), Some("tiny"));
    assert_eq!(st.meta("step"), Some("3"));
    assert!(st.meta("controller").unwrap().contains("layer2.conv.input=1"));
    assert_eq!(st.get("fc.weight").unwrap().shape, vec![10, 1024]);
    assert_eq!(st.f32("layer1.conv.weight").unwrap().len(), 72);
    // Written again by the crate, it reads back to the same tensors and metadata.
    assert_eq!(SafeTensors::from_bytes(&st.to_bytes().unwrap()).unwrap(), st);
}
