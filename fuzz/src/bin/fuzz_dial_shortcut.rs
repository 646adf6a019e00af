//! AFL++ target `dial_shortcut`: see `switchboard::fuzz::dial_shortcut`.
fn main() {
    afl::fuzz!(|data: &[u8]| switchboard::fuzz::dial_shortcut(data));
}
