//! AFL++ target `ifp_frame`: see `switchboard::fuzz::ifp_frame`.
fn main() {
    afl::fuzz!(|data: &[u8]| switchboard::fuzz::ifp_frame(data));
}
