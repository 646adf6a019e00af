import { describe, expect, it } from "vitest";
import { badgeWords, findByKey, isEmpty, phonesOf, stateTone, stateWords } from "./confirmations";
import type { ConfirmationsSnapshot } from "../bindings/ConfirmationsSnapshot";
import type { ConfirmationView } from "../bindings/ConfirmationView";

function view(key: string, phone: string, state: ConfirmationView["state"]): ConfirmationView {
  return {
    key, phone, action_id: key, session: null,
    autonomy: { autonomy: "ask_before_action", source: "no_session", reported_at_ms: null, words: "ask before action (the spec's fallback): the proposal names no session" },
    summary: "s",
    tool: { name: "t", known: false, description: null, risk: null, capability: null, old_confirmation: null, access: null },
    params: {}, hash: { given: "", computed: "", matches: true }, risk: "low", reason: null,
    idempotency_key: key, expires_at: "", expires_at_ms: 0, proposed_at_ms: 0, updated_at_ms: 0,
    ended_at_ms: null, state, confirmed_by: null, confirmation_ref: null, reject_reason: null,
    result_error_class: null, result_message: null, result_message_cut: false, ended_text: null,
    phone_action: null, timeline: [], timeline_dropped: 0, anomalies: [],
  };
}

const snap: ConfirmationsSnapshot = {
  waiting: [view("a", "Pixel", "requested")],
  ended: [view("b", "Tab", "executed"), view("c", "Pixel", "rejected")],
  stray: [], ended_dropped: 0, waiting_dropped: 0, ended_cap: 200, tool_list: null,
};

describe("confirmations helpers", () => {
  it("lists phones once, in first-seen order", () => {
    expect(phonesOf(snap)).toEqual(["Pixel", "Tab"]);
    expect(phonesOf(null)).toEqual([]);
  });
  it("knows an empty snapshot", () => {
    expect(isEmpty(snap)).toBe(false);
    expect(isEmpty({ ...snap, waiting: [], ended: [] })).toBe(true);
    expect(isEmpty(null)).toBe(true);
  });
  it("finds by key in both lists", () => {
    expect(findByKey(snap, "c")?.state).toBe("rejected");
    expect(findByKey(snap, "zz")).toBeNull();
  });
  it("words and tones every state", () => {
    expect(stateWords("requested")).toBe("Waiting on the phone");
    expect(stateTone("executed")).toBe("ok");
    expect(stateTone("failed")).toBe("bad");
  });
});

describe("badge words", () => {
  it("tells a timed-out proposal from a declined one", () => {
    expect(badgeWords({ state: "rejected", reject_reason: "expired" })).toBe("No answer in time");
    expect(badgeWords({ state: "rejected", reject_reason: "user_denied" })).toBe("Declined");
    expect(badgeWords({ state: "rejected", reject_reason: null })).toBe("Declined or refused");
    expect(badgeWords({ state: "executed", reject_reason: null })).toBe("Done");
  });
});
