// What the Phones view says about pairing while Switchboard runs with --demo (unit-tested).
//
// The demo desktop's identity (its key and certificate) is made afresh, in memory, at every
// start, and its port is any free one: nothing of it is kept (no development credential may
// exist: ifp1-notes.md, "Pairing and identity"). A phone paired with it is stranded after a
// restart, so the pairing card says so plainly, beside the code.

/** The note under the demo's pairing code: who can reach it, and that a pairing with the demo
 * does not survive a restart of Switchboard. `port` is the port the demo listens on now. */
export function demoPairingNote(port: number): string {
  return (
    `Demo: Switchboard listens on this computer only (loopback, port ${port}), so only the built-in demo phone ` +
    `or a phone simulator on this computer can reach it. Its identity is throwaway: a new certificate and key, ` +
    `and a new port, at every start, kept nowhere. A phone paired with the demo cannot reconnect after ` +
    `Switchboard restarts and has to pair again. Start Switchboard without --demo to pair a real phone: ` +
    `its identity is kept in the OS key store, so pairings survive restarts.`
  );
}
