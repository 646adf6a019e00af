// Pure helpers of the Phone lines view: states, decisions and manifest checks in words, filtering.
import type { PhoneLineState } from "../bindings/PhoneLineState";
import type { PhoneLineSummary } from "../bindings/PhoneLineSummary";
import type { SurfaceScope } from "../bindings/SurfaceScope";
import type { ExclusionTest } from "../bindings/ExclusionTest";
import type { PhoneLinesPhone } from "../bindings/PhoneLinesPhone";
import { localTime } from "./localTime";

export type Tone = "ok" | "warn" | "bad" | "muted";

/** A line's state as a short label, a tone for its badge and a sentence saying what it means. */
export function stateInfo(state: PhoneLineState): { label: string; tone: Tone; meaning: string } {
  switch (state) {
    case "paired":
      return { label: "Paired", tone: "ok", meaning: "Known, and its describe succeeded (or its record allows it): LumiAgent dials it." };
    case "skipped_name_mismatch":
      return { label: "Skipped: name mismatch", tone: "warn", meaning: "Its describe declares another extension.name than the registry knows it by, so LumiAgent skips it." };
    case "unknown":
      return { label: "Unknown", tone: "muted", meaning: "Not in the registry of known phone lines: LumiAgent never dials it." };
    case "revoked":
      return { label: "Revoked", tone: "bad", meaning: "Its pairing record says allowed: false. LumiAgent re-approves every known line whose describe succeeds on its next discovery, so this lasts until then; to keep LumiAgent away from the line for good, take the endpoint's permission away in Lumiverse on the phone." };
    case "describe_failed":
      return { label: "Describe failed", tone: "bad", meaning: "Its describe failed or did not answer with a manifest." };
    case "not_dialed":
      return { label: "Not dialed", tone: "muted", meaning: "Known, but neither dialed yet nor recorded." };
  }
}

/** The record's `allowed` in words. */
export function allowedWords(allowed: boolean | null): string {
  if (allowed === null) return "No pairing record";
  return allowed ? "Allowed" : "Not allowed";
}

/** A line's decision for the list of lines: the record's `allowed` and, when the record has
 * one, the time it was decided. Without a record there is no decision, so no time. */
export function decisionWords(line: Pick<PhoneLineSummary, "allowed" | "decided_at">): string {
  const words = allowedWords(line.allowed);
  if (line.allowed === null || line.decided_at === null) return words;
  return `${words} · decided ${localTime(line.decided_at)}`;
}

/** Whether the manifest changed since the decision, in words. */
export function hashWords(line: Pick<PhoneLineSummary, "hash_matches_current" | "manifest_hash" | "current_manifest_hash">): { text: string; tone: Tone } {
  if (line.hash_matches_current === true) return { text: "Manifest unchanged since the decision", tone: "ok" };
  // Information, not a task: LumiAgent re-approves a changed manifest on its next discovery.
  if (line.hash_matches_current === false)
    return { text: "Manifest changed since the decision; LumiAgent re-approves it on its next discovery (nothing to do)", tone: "muted" };
  if (!line.manifest_hash) return { text: "No decision recorded", tone: "muted" };
  return { text: "No current describe to compare with the recorded manifest hash", tone: "muted" };
}

/** A surface's scope in words. */
export function scopeWords(scope: SurfaceScope): string {
  return scope === "per_character" ? "Per character" : "Global";
}

/** A hash shortened for display: first 12 hex digits and an ellipsis. */
export function shortHash(hash: string | null): string {
  if (!hash) return "—";
  return hash.length > 12 ? `${hash.slice(0, 12)}…` : hash;
}

/** Lines whose name or identifier contains `query` (case-insensitive) and, unless "all", whose state is `state`. */
export function filterLines(lines: PhoneLineSummary[], query: string, state: PhoneLineState | "all"): PhoneLineSummary[] {
  const q = query.trim().toLowerCase();
  return lines.filter(
    (l) =>
      (state === "all" || l.state === state) &&
      (!q || l.display_name.toLowerCase().includes(q) || l.identifier.toLowerCase().includes(q)),
  );
}

/** The revoke confirmation's wording. */
export function revokePrompt(name: string, file: string, backup: string): { title: string; body: string } {
  return {
    title: `Revoke ${name}?`,
    body: `Its pairing record gets allowed: false, so LumiAgent stops dialing ${name} until its next discovery (LumiAgent then re-approves every known line whose describe succeeds). Switchboard can take a permission away but never grant one; pairing it again is done on the phone. This writes the file ${file} (the previous file is kept as ${backup}).`,
  };
}

/** The revoke dialog's words when the lines are a paired phone's: the phone is asked, it decides. */
export function revokeOnPhonePrompt(name: string, phone: string): { title: string; body: string } {
  return {
    title: `Revoke ${name}?`,
    body: `Switchboard asks the phone ${phone} to set ${name}'s pairing record to allowed: false, so LumiAgent stops dialing it until its next discovery (LumiAgent then re-approves every known line whose describe succeeds). Switchboard can take a permission away but never grant one; pairing it again is done on the phone. The phone's new settings show here when they arrive.`,
  };
}

/** The result of testing a path against a line's exclusions, in words. */
export function exclusionWords(t: ExclusionTest): string {
  if (t.matched) {
    return `Excluded: ${t.relative_path} is covered by "${t.matched}", so LumiAgent's find tools skip it.`;
  }
  return `Not excluded: none of the ${t.exclusion_count} prefixes covers ${t.relative_path || "(empty path)"}, so the find tools search it.`;
}

/** A warning from the core with any epoch-millisecond `decidedAt` shown as local time. */
export function warningWords(w: string): string {
  return w.replace(/decidedAt (\d{10,16})/g, (_, ms: string) => `decided ${localTime(Number(ms))}`);
}

/** A phone as the phone picker lists it: its pairing name (the device id when it has none),
 * and whether the settings shown are the last it sent before going away. */
export function phoneChoiceWords(p: PhoneLinesPhone): string {
  const name = p.label.trim() || p.device_id;
  return p.connected ? name : `${name} (not connected: its last settings)`;
}

/** The line the detail pane shows: the selected one while the search and state filter keep it
 * in the list, else none (a pane describing a line the list hides reads as the search's hit). */
export function selectedIn(shown: PhoneLineSummary[], selectedId: string | null): PhoneLineSummary | null {
  return shown.find((l) => l.identifier === selectedId) ?? null;
}
