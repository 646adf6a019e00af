//! AFL++ target `surface_manifest`: see `switchboard::fuzz::surface_manifest`.
fn main() {
    afl::fuzz!(|data: &[u8]| switchboard::fuzz::surface_manifest(data));
}
