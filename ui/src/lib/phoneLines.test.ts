import { describe, expect, it } from "vitest";
import { warningWords, allowedWords, decisionWords, exclusionWords, filterLines, hashWords, revokeOnPhonePrompt, revokePrompt, shortHash, stateInfo } from "./phoneLines";
import { ago, localTime } from "./localTime";
import type { PhoneLineSummary } from "../bindings/PhoneLineSummary";

// Times are checked in UTC (vitest runs under Node, which honours TZ set at run time).
declare const process: { env: Record<string, string | undefined> };
process.env.TZ = "UTC";

function line(id: string, name: string, state: PhoneLineSummary["state"]): PhoneLineSummary {
  return {
    identifier: id,
    display_name: name,
    state,
    allowed: true,
    decided_at: 1_726_000_000_000,
    manifest_hash: "a".repeat(64),
    current_manifest_hash: null,
    hash_matches_current: null,
    self_declared_name: null,
    self_declared_version: null,
    surfaces: [],
    exclusions: [],
    normalisation_notes: [],
    warnings: [],
  };
}

describe("phone-line words", () => {
  it("labels every state", () => {
    expect(stateInfo("skipped_name_mismatch").label).toBe("Skipped: name mismatch");
    expect(stateInfo("revoked").tone).toBe("bad");
    expect(stateInfo("unknown").meaning).toContain("never dials");
  });

  it("says whether the manifest changed since the decision", () => {
    const l = line("lumirealm", "LumiRealm", "paired");
    const changed = hashWords({ ...l, hash_matches_current: false });
    expect(changed.text).toBe("Manifest changed since the decision; LumiAgent re-approves it on its next discovery (nothing to do)");
    expect(changed.tone).toBe("muted");
    expect(hashWords({ ...l, hash_matches_current: true }).tone).toBe("ok");
    expect(hashWords(l).text).toContain("No current describe");
    expect(hashWords({ ...l, manifest_hash: null }).text).toBe("No decision recorded");
    expect(allowedWords(null)).toBe("No pairing record");
    expect(allowedWords(false)).toBe("Not allowed");
    expect(shortHash("0123456789abcdef")).toBe("0123456789ab…");
    expect(shortHash(null)).toBe("—");
  });

  it("gives a decision time only with a pairing record", () => {
    const l = line("lumirealm", "LumiRealm", "paired");
    expect(decisionWords(l)).toBe("Allowed · decided 2024-09-10 20:26:40");
    expect(decisionWords({ ...l, allowed: false })).toBe("Not allowed · decided 2024-09-10 20:26:40");
    // No record: no decision, so nothing like "decided —" after it.
    expect(decisionWords({ ...l, allowed: null, decided_at: null })).toBe("No pairing record");
  });

  it("filters by name, identifier and state", () => {
    const lines = [line("lumirealm", "LumiRealm", "paired"), line("risu-notes", "Risu Notes", "unknown")];
    expect(filterLines(lines, "realm", "all").map((l) => l.identifier)).toEqual(["lumirealm"]);
    expect(filterLines(lines, "RISU-", "all").map((l) => l.identifier)).toEqual(["risu-notes"]);
    expect(filterLines(lines, "", "unknown").map((l) => l.identifier)).toEqual(["risu-notes"]);
    expect(filterLines(lines, "realm", "unknown")).toEqual([]);
  });

  it("words the revoke dialog and exclusion results", () => {
    const p = revokePrompt("LumiRealm", "/tmp/p.json", "/tmp/p.json.bak");
    expect(p.title).toBe("Revoke LumiRealm?");
    expect(p.body).toContain("This writes the file /tmp/p.json");
    expect(p.body).toContain("/tmp/p.json.bak");
    const q = revokeOnPhonePrompt("LumiRealm", "dev_0123456789abcdef");
    expect(q.title).toBe("Revoke LumiRealm?");
    expect(q.body).toContain("asks the phone dev_0123456789abcdef");
    expect(q.body).toContain("never grant one");
    expect(q.body).not.toContain("writes the file");
    expect(
      exclusionWords({ identifier: "lumirealm", path: "x", relative_path: "lumirealm.source.a", matched: "lumirealm.source", exclusion_count: 3 }),
    ).toBe('Excluded: lumirealm.source.a is covered by "lumirealm.source", so LumiAgent\'s find tools skip it.');
    expect(
      exclusionWords({ identifier: "lumirealm", path: "x", relative_path: "lumirealm.sources", matched: null, exclusion_count: 3 }),
    ).toContain("none of the 3 prefixes covers lumirealm.sources");
  });

  it("shows a warning's decidedAt as local time", () => {
    expect(warningWords("pairing revoked (decidedAt 1726000000000); LumiAgent re-approves it on its next discovery if its describe succeeds")).toBe(
      "pairing revoked (decided 2024-09-10 20:26:40); LumiAgent re-approves it on its next discovery if its describe succeeds",
    );
    expect(warningWords("the manifest changed since the pairing decision")).toBe("the manifest changed since the pairing decision");
  });

  it("formats local times and ages", () => {
    expect(localTime(1_726_000_000_000)).toBe("2024-09-10 20:26:40");
    expect(localTime(null)).toBe("—");
    expect(localTime(Number.NaN)).toBe("—");
    const now = 1_726_000_000_000;
    expect(ago(now - 10_000, now)).toBe("just now");
    expect(ago(now - 5 * 60_000, now)).toBe("5 min ago");
    expect(ago(now - 3 * 3_600_000, now)).toBe("3 h ago");
    expect(ago(now - 48 * 3_600_000, now)).toBe("2 days ago");
    expect(ago(now + 60_000, now)).toBe("in the future");
  });
});
