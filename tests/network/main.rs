//! The LAN link on loopback: pairing and its security, phones with a wrong clock, hostile
//! peers, the connection budget, stress, switchboard-tap under Bun, and the control channel (the
//! Unix socket, or the named pipe on Windows). The flood of failed connections, which counts log
//! lines, is a program of its own (tests/pairing_flood.rs).
//!
//! One test program for the whole area, each file a module of it: linking one program instead
//! of one per file is most of what building the tests costs on a 2-core machine.

#[path = "../support/confirm.rs"]
mod confirm;
#[path = "../support/desk.rs"]
mod desk;
#[path = "../support/small_dial.rs"]
mod small_dial;

mod clock_skew;
mod connection_budget;
mod control;
mod control_pipe;
mod hostile_input;
mod link;
mod link_stress;
mod pairing_confirm;
mod pairing_security;
mod tap_node;
mod unapplied_budget;
