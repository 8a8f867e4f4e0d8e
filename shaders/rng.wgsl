// The counter-based RNG of docs/CODEC.md (`hash32`, `rng24`; src/reference/quant.rs mirrors
// it), prepended to every shader that draws random numbers. It declares no bindings.

fn hash32(x_in: u32) -> u32 {
    var x = x_in;
    x ^= x >> 16u;
    x *= 0x7feb352du;
    x ^= x >> 15u;
    x *= 0x846ca68bu;
    x ^= x >> 16u;
    return x;
}

// The per-tensor part of rng24, for kernels that draw many numbers of one stream: rng24(seed,
// stream, i) = hash32(rng_key(seed, stream) ^ i) >> 8.
fn rng_key(seed: u32, stream: u32) -> u32 {
    return hash32(hash32(seed ^ 0x9e3779b9u) ^ stream);
}

fn rng24(seed: u32, stream: u32, index: u32) -> u32 {
    return hash32(rng_key(seed, stream) ^ index) >> 8u;
}
