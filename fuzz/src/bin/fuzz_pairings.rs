//! AFL++ target `pairings`: see `switchboard::fuzz::pairings`.
fn main() {
    afl::fuzz!(|data: &[u8]| switchboard::fuzz::pairings(data));
}
