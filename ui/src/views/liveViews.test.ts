// @vitest-environment jsdom
// The views hold their data in live stores (lib/live.svelte.ts): mounted against a stand-in
// host, each reads after listening, again on its events and on a phone's reconnect, does not
// poll data that has an event, and leaves no listener or timer behind when it goes.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { flushSync, mount, unmount, type Component } from "svelte";

/** The stand-in host: the handlers listening per event, and the commands' answers. */
const host = vi.hoisted(() => {
  const handlers = new Map<string, Set<(p: unknown) => void>>();
  const reads: Record<string, number> = {};
  const answers: Record<string, unknown> = {};
  return {
    handlers,
    reads,
    answers,
    listening(name: string) {
      return handlers.get(name)?.size ?? 0;
    },
    emit(name: string, payload: unknown = null) {
      for (const h of [...(handlers.get(name) ?? [])]) h(payload);
    },
    reset() {
      handlers.clear();
      for (const k of Object.keys(reads)) delete reads[k];
    },
  };
});

vi.mock("../lib/api", async (original) => {
  const real = await original<typeof import("../lib/api")>();
  const command = (name: string) => async () => {
    host.reads[name] = (host.reads[name] ?? 0) + 1;
    return structuredClone(host.answers[name]);
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
      phonesSnapshot: command("phonesSnapshot"),
      bridgeSnapshot: command("bridgeSnapshot"),
      confirmationsSnapshot: command("confirmationsSnapshot"),
      autonomyTable: command("autonomyTable"),
      explainError: command("explainError"),
    },
  };
});

import Confirmations from "./Confirmations.svelte";
import Bridge from "./Bridge.svelte";
import Phones from "./Phones.svelte";

const connected = { kind: "phone_connected", device_id: "d1", label: "Pixel" };
const settle = () => vi.advanceTimersByTimeAsync(0);

/** Mounts `component`, lets it listen and read; returns how to unmount it. */
async function show(component: Component<Record<string, never>>) {
  const target = document.createElement("div");
  document.body.append(target);
  const view = mount(component, { target });
  flushSync();
  await settle();
  return {
    target,
    async close() {
      unmount(view);
      target.remove();
      await settle();
    },
  };
}

describe("views on live stores", () => {
  beforeEach(() => {
    vi.useFakeTimers();
    host.reset();
    host.answers.phoneNames = { d1: "Pixel" };
    host.answers.phonesSnapshot = {
      demo: false, link_error: null, key_store_problem: null, storage_problem: null, phones: [], pairing: null,
      pending: null, last_pairing: null, diagnostics: null, offerable: [], troubleshoot: null,
    };
    host.answers.bridgeSnapshot = { banners: [], history: [], diagnostics: [] };
    host.answers.confirmationsSnapshot = {
      waiting: [], ended: [], stray: [], ended_dropped: 0, waiting_dropped: 0, ended_cap: 100, tool_list: null,
    };
    host.answers.autonomyTable = null;
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("Confirmations reads on its event and a reconnect, never on a timer, and stops with the view", async () => {
    const v = await show(Confirmations);
    expect(host.listening("switchboard://confirmations")).toBeGreaterThan(0);
    expect(host.reads.confirmationsSnapshot).toBe(1);
    expect(v.target.textContent).toContain("Nothing waiting on a phone");
    await vi.advanceTimersByTimeAsync(60_000);
    expect(host.reads.confirmationsSnapshot).toBe(1); // no poll
    host.emit("switchboard://confirmations");
    await settle();
    expect(host.reads.confirmationsSnapshot).toBe(2);
    host.emit("switchboard://notice", connected);
    await settle();
    expect(host.reads.confirmationsSnapshot).toBe(3);
    await v.close();
    expect(host.listening("switchboard://confirmations")).toBe(0);
    expect(host.listening("switchboard://notice")).toBe(0);
    expect(vi.getTimerCount()).toBe(0); // the 1 s clock went with it
  });

  it("Bridge reads again when the bridge store changed, never by the clock, and stops when it goes", async () => {
    const v = await show(Bridge);
    expect(host.reads.bridgeSnapshot).toBe(1);
    // No timer reads it: a quiet bridge costs nothing.
    await vi.advanceTimersByTimeAsync(10_000);
    expect(host.reads.bridgeSnapshot).toBe(1);
    host.answers.bridgeSnapshot = {
      banners: [], history: [],
      diagnostics: [{ phone: "d1", path: { caller: "com.example.notes", endpoint: "calendar.read" }, error: "boom", reason: "not_permission", count: 1, first_seen_ms: 0, last_seen_ms: 0 }],
    };
    // A failure that raised no banner (a diagnostic) moves the store: the app says so.
    host.emit("switchboard://bridge", null);
    await settle();
    expect(host.reads.bridgeSnapshot).toBe(2);
    await v.close();
    const before = host.reads.bridgeSnapshot;
    host.emit("switchboard://bridge", null);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(host.reads.bridgeSnapshot).toBe(before);
    expect(host.listening("switchboard://bridge")).toBe(0);
  });

  it("Phones runs its 1 s clock only while something shown reads it", async () => {
    const phone = (connected: boolean) => ({
      record: {
        device_id: "d1", public_key: "", label: "Pixel", capabilities: [], paired_at_ms: 0,
        last_seen_ms: 0, last_address: null, binding: null,
      },
      connected, address: null, protocol_version: 1, key_fingerprint: "", clock_skew_ms: null, clock_skew: null,
    });
    const answer = (connected: boolean) => {
      host.answers.phonesSnapshot = { ...(host.answers.phonesSnapshot as object), phones: [phone(connected)] };
    };
    const reload = async () => {
      host.emit("switchboard://phones");
      await settle();
      flushSync();
    };
    answer(true);
    const v = await show(Phones);
    expect(v.target.textContent).toContain("Connected");
    // Every phone connected, no pairing open: nothing to count, no timer.
    expect(vi.getTimerCount()).toBe(0);
    // A phone not connected shows how long ago it was seen: the clock runs.
    answer(false);
    await reload();
    expect(v.target.textContent).toContain("last seen");
    expect(vi.getTimerCount()).toBe(1);
    // Connected again: it stops.
    answer(true);
    await reload();
    expect(vi.getTimerCount()).toBe(0);
    await v.close();
  });

  it("Phones reads on the phones event and shows what it read", async () => {
    const v = await show(Phones);
    expect(host.reads.phonesSnapshot).toBe(1);
    host.answers.phonesSnapshot = { ...(host.answers.phonesSnapshot as object), link_error: "port 47470 is taken" };
    host.emit("switchboard://phones");
    await settle();
    flushSync();
    expect(host.reads.phonesSnapshot).toBe(2);
    expect(v.target.textContent).toContain("port 47470 is taken");
    await v.close();
    expect(host.listening("switchboard://phones")).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });
});
