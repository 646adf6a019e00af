//! AFL++ target `link_after_hello`: see `switchboard::fuzz::link_after_hello`.
fn main() {
    afl::fuzz!(|data: &[u8]| switchboard::fuzz::link_after_hello(data));
}
