//! AFL++ target `runtime_manifest`: see `switchboard::fuzz::runtime_manifest`.
fn main() {
    afl::fuzz!(|data: &[u8]| switchboard::fuzz::runtime_manifest(data));
}
