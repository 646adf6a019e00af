//! AFL++ target `scenario`: see `switchboard::fuzz::scenario`.
fn main() {
    afl::fuzz!(|data: &[u8]| switchboard::fuzz::scenario(data));
}
