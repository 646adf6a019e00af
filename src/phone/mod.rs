//! The reference phone: what `switchboard-phone` and the desktop's `--demo` run.
