//! AFL++ target `host_error`: see `switchboard::fuzz::host_error`.
fn main() {
    afl::fuzz!(|data: &[u8]| switchboard::fuzz::host_error(data));
}
