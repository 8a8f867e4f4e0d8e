//! The `fdsr` command line (being assembled).
fn main() {}
