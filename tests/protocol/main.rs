//! The protocol logic against its specs and the corpus: ifp/1 messages, sequences and the receiver,
//! acknowledgements, docs/protocol.md's examples, manifest hashes, fuzz seeds, dial frames, host
//! error texts, phone actions, the runtime protocol, phone-line manifests and pairings files,
//! confirmations, the demo scenario.
//!
//! One test program for the whole area, each file a module of it: linking one program instead
//! of one per file is most of what building the tests costs on a 2-core machine.

#[path = "../support/confirm.rs"]
mod confirm;

mod confirmations;
mod demo_scenario;
mod dial_frame;
mod fuzz_seeds;
mod host_errors;
mod ifp_messages;
mod ifp_receiver;
mod ifp_sequences;
mod manifest_hash_vectors;
mod phone_action;
mod phone_line_corpus;
mod phone_line_pairings;
mod protocol_acks;
mod protocol_doc;
mod runtime_protocol;
