import { describe, expect, it } from "vitest";
import { demoPairingNote } from "./demoPairing";

describe("demoPairingNote", () => {
  // The fresh user's fourth bug: a phone paired with the demo desktop was stranded after a
  // restart, and nothing beside the pairing code said the demo's identity is throwaway.
  it("says plainly that a pairing with the demo does not survive a restart", () => {
    const note = demoPairingNote(38211);
    expect(note).toContain("port 38211");
    expect(note).toMatch(/throwaway/);
    expect(note).toMatch(/new certificate and key, and a new port, at every start/);
    expect(note).toMatch(/cannot reconnect after Switchboard restarts and has to pair again/);
    expect(note).toMatch(/without --demo/);
  });
});
