//! AFL++ target `jsonl_import`: see `switchboard::fuzz::jsonl_import`.
fn main() {
    afl::fuzz!(|data: &[u8]| switchboard::fuzz::jsonl_import(data));
}
