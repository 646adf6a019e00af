// @vitest-environment jsdom
// The live store (live.svelte.ts): reads after listening, again on events, coalesced and never
// overlapping, again when a phone's link comes back or the page is shown again; keeps a failed
// read's words; stops listening when its component goes. A fake host stands in for Tauri's
// events; the reads are promises the tests settle by hand.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { flushSync } from "svelte";
import type { AppEventName } from "../bindings/ipc";
import type { HubNotice } from "../bindings/HubNotice";
import { EventBus, Live, live, onEvent, onEventValue, onNoticeKind, type Listen } from "./live.svelte";

/** A stand-in for the host's events: who listens, and a way to send one. */
function fakeHost() {
  const handlers = new Map<string, Set<(p: unknown) => void>>();
  const calls = { listen: 0, unlisten: 0 };
  const listen: Listen = async (name, h) => {
    calls.listen++;
    const set = handlers.get(name) ?? new Set();
    handlers.set(name, set);
    const f = h as (p: unknown) => void;
    set.add(f);
    return () => {
      calls.unlisten++;
      set.delete(f);
    };
  };
  return {
    bus: new EventBus(listen),
    calls,
    emit(name: AppEventName, payload: unknown = null) {
      for (const h of [...(handlers.get(name) ?? [])]) h(payload);
    },
    listening(name: AppEventName) {
      return handlers.get(name)?.size ?? 0;
    },
  };
}

/** A read the test answers by hand; counts reads and how many ran at once. */
function handRead<T>() {
  const pending: { resolve: (v: T) => void; reject: (e: unknown) => void }[] = [];
  const stats = { started: 0, running: 0, mostAtOnce: 0 };
  const read = () =>
    new Promise<T>((resolve, reject) => {
      stats.started++;
      stats.running++;
      stats.mostAtOnce = Math.max(stats.mostAtOnce, stats.running);
      pending.push({
        resolve: (v) => {
          stats.running--;
          resolve(v);
        },
        reject: (e) => {
          stats.running--;
          reject(e);
        },
      });
    });
  return {
    read,
    stats,
    /** Answers the oldest read still waiting. */
    async answer(v: T) {
      const p = pending.shift();
      if (!p) throw new Error("no read is waiting");
      p.resolve(v);
      await settle();
    },
    async fail(e: unknown) {
      const p = pending.shift();
      if (!p) throw new Error("no read is waiting");
      p.reject(e);
      await settle();
    },
    waiting: () => pending.length,
  };
}

const settle = () => vi.advanceTimersByTimeAsync(0);

const connected: HubNotice = { kind: "phone_connected", device_id: "d1", label: "Pixel" };
const gone: HubNotice = { kind: "phone_disconnected", device_id: "d1", reason: "closed" };

describe("live store", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("listens first, then reads, and reads again on each event", async () => {
    const host = fakeHost();
    const r = handRead<number>();
    const s = new Live(r.read, { on: [onEvent("switchboard://phones")], bus: host.bus, reconnect: null });
    const started = s.start();
    expect(r.stats.started).toBe(0); // not before the host subscription is in place
    await started;
    expect(host.listening("switchboard://phones")).toBe(1);
    expect(r.stats.started).toBe(1);
    expect(s.loading).toBe(true);
    await r.answer(1);
    expect(s.value).toBe(1);
    expect(s.loading).toBe(false);
    host.emit("switchboard://phones");
    expect(r.stats.started).toBe(2);
    await r.answer(2);
    expect(s.value).toBe(2);
    host.emit("switchboard://confirmations"); // not one of its events
    await settle();
    expect(r.stats.started).toBe(2);
    s.stop();
  });

  it("coalesces a burst into one more read, never two at once, and shows the last state", async () => {
    const host = fakeHost();
    const r = handRead<number>();
    const s = new Live(r.read, { on: [onEvent("switchboard://confirmations")], bus: host.bus, reconnect: null });
    await s.start();
    for (let i = 0; i < 50; i++) host.emit("switchboard://confirmations");
    expect(r.stats.started).toBe(1);
    await r.answer(1);
    expect(r.stats.started).toBe(2); // the whole burst: one read after the first
    for (let i = 0; i < 50; i++) host.emit("switchboard://confirmations");
    await r.answer(2);
    expect(r.stats.started).toBe(3);
    await r.answer(3);
    expect(r.stats.started).toBe(3);
    expect(r.stats.mostAtOnce).toBe(1);
    expect(s.value).toBe(3);
    s.stop();
  });

  it("spaces reads by gapMs for bursty events, the last one still read", async () => {
    const host = fakeHost();
    let state = 0;
    const reads: number[] = [];
    const s = new Live(async () => {
      reads.push(state);
      return state;
    }, { on: [onNoticeKind("banner_raised", "banner_cleared")], gapMs: 250, bus: host.bus, reconnect: null });
    await s.start();
    await settle();
    expect(reads).toEqual([0]);
    for (let i = 1; i <= 100; i++) {
      state = i;
      host.emit("switchboard://notice", { kind: "banner_raised", banner_id: "a>b", message: "m" });
    }
    host.emit("switchboard://notice", gone); // another kind: no read
    await vi.advanceTimersByTimeAsync(100);
    expect(reads).toEqual([0]);
    await vi.advanceTimersByTimeAsync(200);
    expect(reads).toEqual([0, 100]);
    expect(s.value).toBe(100);
    await vi.advanceTimersByTimeAsync(2000);
    expect(reads).toEqual([0, 100]);
    s.stop();
  });

  it("reads again when a phone's link comes back and when the page is shown again", async () => {
    const host = fakeHost();
    const r = handRead<string>();
    const s = new Live(r.read, { bus: host.bus });
    await s.start();
    await r.answer("first");
    host.emit("switchboard://notice", gone);
    await settle();
    expect(r.stats.started).toBe(1);
    host.emit("switchboard://notice", connected);
    expect(r.stats.started).toBe(2);
    await r.answer("after reconnect");
    expect(s.value).toBe("after reconnect");

    const visibility = vi.spyOn(document, "visibilityState", "get");
    visibility.mockReturnValue("hidden");
    document.dispatchEvent(new Event("visibilitychange"));
    await settle();
    expect(r.stats.started).toBe(2);
    visibility.mockReturnValue("visible");
    document.dispatchEvent(new Event("visibilitychange"));
    expect(r.stats.started).toBe(3);
    await r.answer("shown again");
    expect(s.value).toBe("shown again");
    visibility.mockRestore();
    s.stop();
  });

  it("keeps the value and says a failed read in the host's words; a good read clears it", async () => {
    const host = fakeHost();
    const r = handRead<number>();
    const s = new Live(r.read, { on: [onEvent("switchboard://phones")], bus: host.bus, reconnect: null });
    await s.start();
    await r.answer(7);
    host.emit("switchboard://phones");
    await r.fail({ kind: "link", message: "the link is not running" });
    expect(s.error).toBe("the link is not running");
    expect(s.value).toBe(7);
    expect(s.loading).toBe(false);
    host.emit("switchboard://phones");
    host.emit("switchboard://phones"); // comes while the read runs
    await r.fail(new Error("socket closed"));
    expect(s.error).toBe("socket closed");
    expect(r.stats.started).toBe(4); // a failed read still reads again for what came meanwhile
    await r.answer(8);
    expect(s.error).toBeNull();
    expect(s.value).toBe(8);
    s.stop();
  });

  it("says so, and keeps saying so, when an event cannot be heard; the others still work", async () => {
    const host = fakeHost();
    const failing: Listen = async (name, h) => {
      if (name === "switchboard://confirmations") throw { kind: "internal", message: "event plugin refused the listener" };
      return (host.bus as unknown as { on: Listen }).on(name, h);
    };
    let n = 0;
    const s = new Live(async () => ++n, {
      on: [onEvent("switchboard://confirmations"), onEvent("switchboard://phones")],
      bus: new EventBus(failing),
      reconnect: null,
    });
    await s.start();
    await settle();
    expect(s.value).toBe(1);
    expect(s.error).toBe("Not kept up to date: event plugin refused the listener");
    host.emit("switchboard://phones");
    await settle();
    expect(s.value).toBe(2);
    expect(s.error).toBe("Not kept up to date: event plugin refused the listener");
    s.stop();
  });

  it("stops listening, polling and reading when its component goes", async () => {
    const host = fakeHost();
    const r = handRead<number>();
    let store!: Live<number>;
    const destroy = $effect.root(() => {
      store = live(r.read, { on: [onEvent("switchboard://phones"), onNoticeKind("banner_raised")], pollMs: 3000, bus: host.bus });
    });
    flushSync();
    await settle();
    expect(host.listening("switchboard://phones")).toBe(1);
    expect(host.listening("switchboard://notice")).toBe(1); // banners and reconnect share one
    expect(host.calls.listen).toBe(2);
    expect(r.stats.started).toBe(1);
    await r.answer(1);
    await vi.advanceTimersByTimeAsync(3000);
    expect(r.stats.started).toBe(2); // the poll
    destroy();
    expect(host.bus.listeners("switchboard://phones")).toBe(0);
    expect(host.bus.listeners("switchboard://notice")).toBe(0);
    await settle();
    expect(host.listening("switchboard://phones")).toBe(0);
    expect(host.listening("switchboard://notice")).toBe(0);
    expect(host.calls.unlisten).toBe(2);
    await r.answer(2); // a read under way when it went is dropped
    expect(store.value).toBe(1);
    host.emit("switchboard://phones");
    host.emit("switchboard://notice", connected);
    document.dispatchEvent(new Event("visibilitychange"));
    await vi.advanceTimersByTimeAsync(10_000);
    expect(r.stats.started).toBe(2);
  });

  it("polls only while the page is shown", async () => {
    const host = fakeHost();
    let n = 0;
    const s = new Live(async () => ++n, { pollMs: 1000, bus: host.bus, reconnect: null });
    await s.start();
    await settle();
    expect(n).toBe(1);
    await vi.advanceTimersByTimeAsync(2000);
    expect(n).toBe(3);
    const visibility = vi.spyOn(document, "visibilityState", "get").mockReturnValue("hidden");
    await vi.advanceTimersByTimeAsync(5000);
    expect(n).toBe(3);
    visibility.mockRestore();
    s.stop();
  });

  it("shows a value an event carries, drops a read started before it and reads once more", async () => {
    const host = fakeHost();
    const r = handRead<string>();
    const s = new Live<string>(r.read, {
      on: [onEventValue<string, "switchboard://notice">("switchboard://notice", (n) => (n.kind === "banner_raised" ? n.message : undefined))],
      bus: host.bus,
      reconnect: null,
    });
    await s.start();
    expect(r.stats.started).toBe(1);
    host.emit("switchboard://notice", { kind: "banner_raised", banner_id: "a>b", message: "carried" });
    expect(s.value).toBe("carried");
    await r.answer("older read");
    expect(s.value).toBe("carried");
    // What started the dropped read may be newer than the put: one more read follows it.
    expect(r.stats.started).toBe(2);
    await r.answer("read after the put");
    expect(s.value).toBe("read after the put");
    host.emit("switchboard://notice", { kind: "banner_cleared", banner_id: "a>b" }); // no value: read
    expect(r.stats.started).toBe(3);
    await r.answer("read");
    expect(s.value).toBe("read");
    expect(r.waiting()).toBe(0);
    s.stop();
  });

  it("an action's answer put while an event's read runs does not hide what the event announced", async () => {
    // A revoke: the command answers the view as it was, while the phone's new settings (the
    // event) already arrived and their read is under way.
    const host = fakeHost();
    const r = handRead<string>();
    const s = new Live<string>(r.read, { on: [onEvent("switchboard://phone-lines")], bus: host.bus, reconnect: null });
    await s.start();
    await r.answer("before");
    host.emit("switchboard://phone-lines");
    expect(r.stats.started).toBe(2);
    s.put("the command's answer");
    await r.answer("new settings (read started before the put)");
    expect(s.value).toBe("the command's answer");
    expect(r.stats.started).toBe(3);
    await r.answer("new settings");
    expect(s.value).toBe("new settings");
    expect(r.waiting()).toBe(0);
    s.stop();
  });

  it("ignores events while inactive; refresh() still reads and resolves after its read", async () => {
    const host = fakeHost();
    let open = false;
    const r = handRead<number>();
    const s = new Live(r.read, { on: [onEvent("switchboard://phones")], active: () => open, bus: host.bus, reconnect: null });
    await s.start();
    host.emit("switchboard://phones");
    await settle();
    expect(r.stats.started).toBe(0);
    let done = false;
    void s.refresh().then(() => (done = true));
    expect(r.stats.started).toBe(1);
    await settle();
    expect(done).toBe(false);
    await r.answer(5);
    expect(done).toBe(true);
    open = true;
    host.emit("switchboard://phones");
    expect(r.stats.started).toBe(2);
    await r.answer(6);
    expect(s.value).toBe(6);
    s.stop();
  });

  it("makes a refresh() asked before it listens its first read, once listening", async () => {
    const host = fakeHost();
    const r = handRead<number>();
    const s = new Live(r.read, { on: [onEvent("switchboard://phones")], bus: host.bus, reconnect: null });
    const started = s.start();
    let done = false;
    void s.refresh().then(() => (done = true));
    expect(r.stats.started).toBe(0);
    await started;
    expect(r.stats.started).toBe(1);
    await r.answer(1);
    expect(done).toBe(true);
    await settle();
    expect(r.stats.started).toBe(1);
    s.stop();
  });

  it("keeps one host subscription per event for many stores, ended with the last", async () => {
    const host = fakeHost();
    const a = new Live(async () => 1, { on: [onEvent("switchboard://phones")], bus: host.bus, reconnect: null });
    const b = new Live(async () => 2, { on: [onEvent("switchboard://phones")], bus: host.bus, reconnect: null });
    await a.start();
    await b.start();
    expect(host.calls.listen).toBe(1);
    expect(host.bus.listeners("switchboard://phones")).toBe(2);
    a.stop();
    await settle();
    expect(host.calls.unlisten).toBe(0);
    b.stop();
    await settle();
    expect(host.calls.unlisten).toBe(1);
    expect(host.bus.listeners("switchboard://phones")).toBe(0);
  });
});
