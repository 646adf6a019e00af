// Pure helpers of the Confirmations view (unit-tested). The view only mirrors: nothing here
// approves, declines or cancels anything; the person confirms on the phone.
import type { ActionState } from "../bindings/ActionState";
import type { ConfirmationView } from "../bindings/ConfirmationView";
import type { ConfirmationsSnapshot } from "../bindings/ConfirmationsSnapshot";

/** A state in words, for badges. */
export function stateWords(s: ActionState): string {
  switch (s) {
    case "requested": return "Waiting on the phone";
    case "approved": return "Approved, waiting for the result";
    case "executed": return "Done";
    case "failed": return "Failed";
    case "rejected": return "Declined or refused";
    case "cancelled": return "Cancelled";
    case "expired": return "Expired";
  }
}

/**
 * The badge of a confirmation: its state in words, except that a rejection for `expired`
 * (the phone got no answer in time) reads "No answer in time" rather than "Declined".
 */
export function badgeWords(c: Pick<ConfirmationView, "state" | "reject_reason">): string {
  if (c.state === "rejected") {
    switch (c.reject_reason) {
      case "expired": return "No answer in time";
      case "user_denied": return "Declined";
      case "policy_denied": return "Refused by policy";
      case "capability_missing": return "Refused: capability missing";
      default: return "Declined or refused";
    }
  }
  return stateWords(c.state);
}

/** The badge tone of a state: ok, bad, warn or muted. */
export function stateTone(s: ActionState): "ok" | "bad" | "warn" | "muted" {
  switch (s) {
    case "executed": return "ok";
    case "failed": return "bad";
    case "rejected": return "warn";
    case "expired": return "warn";
    case "cancelled": return "muted";
    default: return "muted";
  }
}

/** Every phone named in the snapshot, in first-seen order. */
export function phonesOf(snap: ConfirmationsSnapshot | null): string[] {
  if (!snap) return [];
  const seen: string[] = [];
  for (const c of [...snap.waiting, ...snap.ended]) if (!seen.includes(c.phone)) seen.push(c.phone);
  for (const a of snap.stray) if (!seen.includes(a.phone)) seen.push(a.phone);
  return seen;
}

/** True when there is nothing at all to show. */
export function isEmpty(snap: ConfirmationsSnapshot | null): boolean {
  return !snap || (snap.waiting.length === 0 && snap.ended.length === 0 && snap.stray.length === 0);
}

/** The proposal with `key`, waiting or ended. */
export function findByKey(snap: ConfirmationsSnapshot | null, key: string | null): ConfirmationView | null {
  if (!snap || !key) return null;
  return snap.waiting.find((c) => c.key === key) ?? snap.ended.find((c) => c.key === key) ?? null;
}

/** Params as indented JSON for the detail pane. */
export function prettyParams(params: Record<string, unknown>): string {
  return JSON.stringify(params, null, 2);
}

/** The widest window (CSS px) at which the Confirmations view shows the details under the lists
 * instead of beside them (its `@media (max-width: 1100px)` rule, as in Live dials). */
export const DETAILS_BELOW_MAX_WIDTH = 1100;

/** Whether, at this window width, the details are under the lists: picking a confirmation then
 * brings them into view (beside the lists they are in view already). */
export function detailsBelow(windowWidth: number): boolean {
  return windowWidth <= DETAILS_BELOW_MAX_WIDTH;
}
