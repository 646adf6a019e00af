// @vitest-environment jsdom
// The Phone lines view with two paired phones (a picker chooses whose settings show, and the
// view follows the app when the shown phone goes away) and with a search that hides the
// selected line (the detail pane then shows no line).
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { flushSync, mount, unmount } from "svelte";
import type { PhoneLinesSnapshot } from "../bindings/PhoneLinesSnapshot";
import type { PhoneLineSummary } from "../bindings/PhoneLineSummary";

const host = vi.hoisted(() => {
  const handlers = new Map<string, Set<(p: unknown) => void>>();
  const calls: { name: string; args: unknown[] }[] = [];
  const answers: Record<string, unknown> = {};
  return {
    handlers,
    calls,
    answers,
    emit(name: string, payload: unknown = null) {
      for (const h of [...(handlers.get(name) ?? [])]) h(payload);
    },
  };
});

vi.mock("../lib/api", async (original) => {
  const real = await original<typeof import("../lib/api")>();
  const command = (name: string) => async (...args: unknown[]) => {
    host.calls.push({ name, args });
    const a = host.answers[name];
    return structuredClone(typeof a === "function" ? a(...args) : a);
  };
  return {
    ...real,
    inTauri: () => true,
    onNotice: async (name: string, h: (p: unknown) => void) => {
      const set = host.handlers.get(name) ?? new Set();
      host.handlers.set(name, set);
      set.add(h);
      return () => set.delete(h);
    },
    api: {
      ...real.api,
      phoneNames: command("phoneNames"),
      phoneLinesSnapshot: command("phoneLinesSnapshot"),
      showPhoneLinesOf: command("showPhoneLinesOf"),
    },
  };
});

import PhoneLines from "./PhoneLines.svelte";

function line(id: string, name: string): PhoneLineSummary {
  return {
    identifier: id, display_name: name, state: "paired", allowed: true, decided_at: null, manifest_hash: null,
    current_manifest_hash: null, hash_matches_current: null, self_declared_name: null, self_declared_version: null,
    surfaces: [], exclusions: [], normalisation_notes: [], warnings: [],
  };
}

const pixel = { device_id: "dev_pixel", label: "Pixel", connected: true };
const tablet = { device_id: "dev_tablet", label: "Tablet", connected: true };

function snapOf(phone: string | null, phones = [pixel, tablet]): PhoneLinesSnapshot {
  return {
    source: phone ? { kind: "phone", phone } : { kind: "none" },
    lines: phone ? [line("lumirealm", `LumiRealm on ${phone}`), line("risu-notes", "Risu Notes")] : [],
    registry: [], registry_problems: [], can_revoke: phone !== null, phones,
  };
}

const settle = () => vi.advanceTimersByTimeAsync(0);

async function show() {
  const target = document.createElement("div");
  document.body.append(target);
  const view = mount(PhoneLines, { target });
  flushSync();
  await settle();
  return { target, close: async () => { unmount(view); target.remove(); await settle(); } };
}

describe("Phone lines view", () => {
  beforeEach(() => {
    vi.useFakeTimers();
    host.calls.length = 0;
    host.answers.phoneNames = { dev_pixel: "Pixel", dev_tablet: "Tablet" };
    host.answers.phoneLinesSnapshot = snapOf("dev_tablet");
    host.answers.showPhoneLinesOf = (phone: string) => snapOf(phone);
  });
  afterEach(() => vi.useRealTimers());

  it("lets the person choose which paired phone's settings show", async () => {
    const v = await show();
    const picker = v.target.querySelector<HTMLSelectElement>("[data-testid=live-phone-picker]");
    expect(picker).not.toBeNull();
    expect([...picker!.options].map((o) => o.textContent)).toEqual(["Pixel", "Tablet"]);
    expect(picker!.value).toBe("dev_tablet");
    picker!.value = "dev_pixel";
    picker!.dispatchEvent(new Event("change", { bubbles: true }));
    await settle();
    flushSync();
    expect(host.calls.filter((c) => c.name === "showPhoneLinesOf").map((c) => c.args)).toEqual([["dev_pixel"]]);
    expect(v.target.textContent).toContain("LumiRealm on dev_pixel");
    expect(picker!.value).toBe("dev_pixel");
    await v.close();
  });

  it("follows the app to a phone still paired when the shown one is unpaired", async () => {
    const v = await show();
    host.answers.phoneLinesSnapshot = snapOf("dev_pixel", [pixel]);
    host.emit("switchboard://phone-lines");
    await settle();
    flushSync();
    // One phone left: no picker, its name in words, nothing of the phone that went away.
    expect(v.target.querySelector("[data-testid=live-phone-picker]")).toBeNull();
    expect(v.target.textContent).toContain("Showing the phone-line settings of Pixel");
    expect(v.target.textContent).not.toContain("dev_tablet");
    await v.close();
  });

  it("shows no line in the detail pane while the search hides the selected one", async () => {
    const v = await show();
    expect(v.target.querySelector("section.detail")?.getAttribute("aria-label")).toBe("Details of LumiRealm on dev_tablet");
    const find = v.target.querySelector<HTMLInputElement>("input[type=search]")!;
    find.value = "zzz";
    find.dispatchEvent(new Event("input"));
    flushSync();
    expect(v.target.textContent).toContain("No line matches");
    expect(v.target.querySelector("section.detail")?.getAttribute("aria-label")).toBe("No line selected");
    expect(v.target.textContent).toContain("No line matches the search. Change the search to see the lines again.");
    expect(v.target.textContent).not.toContain("Details of");
    // The search cleared, the line selected before is back.
    find.value = "";
    find.dispatchEvent(new Event("input"));
    flushSync();
    expect(v.target.querySelector("section.detail")?.getAttribute("aria-label")).toBe("Details of LumiRealm on dev_tablet");
    await v.close();
  });
});
