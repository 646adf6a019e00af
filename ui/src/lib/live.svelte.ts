// Live data for a view: the one way a view holds data that the app changes under it (unit-tested
// in live.svelte.test.ts).
//
// A view gives `live()` the read (a command, e.g. `api.phonesSnapshot`) and the events that mean
// "this changed" (`switchboard://phones`, a `switchboard://notice` of some kind). The store reads
// once its listeners are up (listen first, then read: a change in between is not missed), reads
// again on each event, when a phone's link comes back (`phone_connected`) and when the page is
// shown again after it was hidden, and stops listening when the view goes. Reads never overlap:
// events that come while one runs make one more read after it (the last state is always read);
// `gapMs` spaces reads further for events that come in bursts. A failed read keeps the value
// shown and says why in `error`. Timers are for data that has no event (`pollMs`) and for time
// itself (a view's own "3 s ago" clock), nothing else.

import { untrack } from "svelte";
import type { UnlistenFn } from "@tauri-apps/api/event";
import type { AppEventName, AppEvents } from "../bindings/ipc";
import { onNotice, toIpcError } from "./api";

/** Subscribes `handler` to app event `name`; resolves to the unsubscribe function once the
 * subscription is in place (the shape of `onNotice` in `api.ts`). */
export type Listen = <K extends AppEventName>(name: K, handler: (payload: AppEvents[K]) => void) => Promise<UnlistenFn>;

/**
 * The app's events, one host subscription per event name however many stores listen to it
 * (each host event is a script the web process runs; a second subscription would run it twice).
 * A name's host subscription ends when its last handler goes.
 */
export class EventBus {
  readonly #listen: Listen;
  readonly #names = new Map<AppEventName, { handlers: Set<(p: unknown) => void>; ready: Promise<UnlistenFn> }>();

  /** A bus over `listen` (the host's events by default). */
  constructor(listen: Listen = onNotice) {
    this.#listen = listen;
  }

  /** Calls `handler` with each payload of event `name`; resolves to its unsubscribe function
   * once the host subscription is in place. A failed host subscription rejects. */
  async on<K extends AppEventName>(name: K, handler: (payload: AppEvents[K]) => void): Promise<UnlistenFn> {
    let entry = this.#names.get(name);
    if (!entry) {
      const handlers = new Set<(p: unknown) => void>();
      const ready = this.#listen(name, (p) => {
        for (const h of [...handlers]) h(p);
      });
      entry = { handlers, ready };
      this.#names.set(name, entry);
    }
    const h = handler as (p: unknown) => void;
    entry.handlers.add(h);
    const mine = entry;
    try {
      await mine.ready;
    } catch (e) {
      mine.handlers.delete(h);
      if (this.#names.get(name) === mine && mine.handlers.size === 0) this.#names.delete(name);
      throw e;
    }
    let done = false;
    return () => {
      if (done) return;
      done = true;
      mine.handlers.delete(h);
      if (mine.handlers.size === 0 && this.#names.get(name) === mine) {
        this.#names.delete(name);
        void mine.ready.then((u) => u()).catch(() => {});
      }
    };
  }

  /** How many handlers listen to `name` now (0: no host subscription). */
  listeners(name: AppEventName): number {
    return this.#names.get(name)?.handlers.size ?? 0;
  }
}

/** The bus every view shares. */
export const appEvents = new EventBus();

/** What a trigger can do to its store: read again, or take a value an event carried. */
export interface LiveSink<T> {
  /** The data changed: read it again (coalesced with other reads). */
  changed(): void;
  /** The event carried the new value: show it without a read. */
  put(value: T): void;
  /** The value shown now. */
  current(): T | undefined;
}

/** Starts listening for a store; resolves to the function that stops (once listening). */
export type Trigger<T = unknown> = (sink: LiveSink<T>, bus: EventBus) => Promise<UnlistenFn> | UnlistenFn;

/** Reads again on each app event `name` (only those `when` accepts, when given). */
export function onEvent<K extends AppEventName>(name: K, when?: (payload: AppEvents[K]) => boolean): Trigger {
  return (sink, bus) => bus.on(name, (p) => {
    if (!when || when(p)) sink.changed();
  });
}

/** Reads again on each `switchboard://notice` whose kind is one of `kinds`. */
export function onNoticeKind(...kinds: AppEvents["switchboard://notice"]["kind"][]): Trigger {
  return onEvent("switchboard://notice", (n) => kinds.includes(n.kind));
}

/** Shows the value event `name` carries: `pick` makes it from the payload and the value shown
 * (`undefined`: this payload carries none, read again instead). */
export function onEventValue<T, K extends AppEventName>(
  name: K,
  pick: (payload: AppEvents[K], current: T | undefined) => T | undefined,
): Trigger<T> {
  return (sink, bus) => bus.on(name, (p) => {
    const v = pick(p, sink.current());
    if (v === undefined) sink.changed();
    else sink.put(v);
  });
}

/**
 * When what was read may have moved without an event for it: a phone's link came back
 * (`phone_connected`: the phone may have changed things while it was away), and the page is
 * shown again after it was hidden (a minimised window; a window made again after the tray is a
 * new page, which reads anew anyway).
 */
export const onReconnect: Trigger = (sink, bus) => {
  const shown = () => {
    if (typeof document !== "undefined" && document.visibilityState === "visible") sink.changed();
  };
  if (typeof document !== "undefined") document.addEventListener("visibilitychange", shown);
  const stopDoc = () => {
    if (typeof document !== "undefined") document.removeEventListener("visibilitychange", shown);
  };
  return bus.on("switchboard://notice", (n) => {
    if (n.kind === "phone_connected") sink.changed();
  }).then(
    (u) => () => {
      stopDoc();
      u();
    },
    (e) => {
      stopDoc();
      throw e;
    },
  );
};

/** How a store reads and when it reads again. */
export interface LiveOptions<T> {
  /** What means "this changed" (`onEvent`, `onNoticeKind`, `onEventValue`, or a view's own). */
  on?: readonly Trigger<T>[];
  /** Reads again when a link comes back or the page is shown again (`onReconnect`, the
   * default); `null`: never. */
  reconnect?: Trigger<T> | null;
  /** Shortest time between the starts of two reads, in ms (0: a read may follow the last one
   * at once). For events that come in bursts. */
  gapMs?: number;
  /** Reads again every `pollMs` ms while the page is shown. ONLY for data the app announces
   * with no event (say which in a comment, and what event would replace it). */
  pollMs?: number;
  /** While this says false, events, polls and the first read do nothing (`refresh()` still
   * reads): data only wanted while a panel is open, say. */
  active?: () => boolean;
  /** Called with each new value, read or put (a view's follow-ups, such as keeping a
   * selection on a row that still exists). */
  onValue?: (value: T) => void;
  /** The bus to listen on (tests give their own). */
  bus?: EventBus;
}

/**
 * Data a view holds live: `value` (undefined until the first read), `error` (the last read's
 * failure in words, `null` once a read succeeds), `loading` (a read is under way). Reactive
 * (`$state`); `value` is replaced whole, never proxied deeply.
 */
export class Live<T> {
  /** The last value read or put; `undefined` before the first. */
  value = $state.raw<T | undefined>(undefined);
  /** Why the last read failed, in words (the host's message); `null` after a good read, unless
   * an event it needs cannot be heard ("Not kept up to date: ..."). */
  error = $state<string | null>(null);
  /** Whether a read is under way. */
  loading = $state(false);

  readonly #read: () => Promise<T>;
  readonly #opts: LiveOptions<T>;
  #started = false;
  /** Listening: reads may start (none before, so no change is missed between a read and the
   * listener). */
  #ready = false;
  #stopped = false;
  #running = false;
  /** A read is wanted after the one running (or the gap). */
  #wanted = false;
  /** Callers of `refresh()` waiting for a read that starts after their call. */
  #waiters: (() => void)[] = [];
  #lastStart = Number.NEGATIVE_INFINITY;
  #gapTimer: ReturnType<typeof setTimeout> | undefined;
  #poll: ReturnType<typeof setInterval> | undefined;
  /** Bumped by `put`: a read started before it would show older data than the put. */
  #epoch = 0;
  #unlisten: UnlistenFn[] = [];
  /** Why an event cannot be heard (a host subscription failed); kept in `error` after reads. */
  #deaf: string | null = null;

  /** A store reading with `read` (not started: `start()`, or use `live()` in a component). */
  constructor(read: () => Promise<T>, opts: LiveOptions<T> = {}) {
    this.#read = read;
    this.#opts = opts;
  }

  /** Listens to the triggers, then reads (when active). Resolves once listening; a trigger
   * that cannot listen is said in `error` and the others still work. */
  async start(): Promise<void> {
    if (this.#started || this.#stopped) return;
    this.#started = true;
    const bus = this.#opts.bus ?? appEvents;
    const sink: LiveSink<T> = {
      changed: () => this.changed(),
      put: (v) => this.put(v),
      current: () => this.value,
    };
    const triggers = [...(this.#opts.on ?? [])];
    const reconnect = this.#opts.reconnect === undefined ? onReconnect : this.#opts.reconnect;
    if (reconnect) triggers.push(reconnect);
    const results = await Promise.allSettled(triggers.map((t) => t(sink, bus)));
    for (const r of results) {
      if (r.status === "fulfilled") {
        if (this.#stopped) r.value();
        else this.#unlisten.push(r.value);
      } else if (!this.#stopped) {
        this.#deaf = `Not kept up to date: ${toIpcError(r.reason).message}`;
        this.error = this.#deaf;
      }
    }
    if (this.#stopped) return;
    this.#ready = true;
    if (this.#opts.pollMs && this.#opts.pollMs > 0) {
      this.#poll = setInterval(() => {
        if (typeof document !== "undefined" && document.visibilityState === "hidden") return;
        this.changed();
      }, this.#opts.pollMs);
    }
    if (this.#waiters.length > 0 || this.#isActive()) {
      this.#wanted = true;
      this.#kick();
    }
  }

  /** Stops listening and polling; reads under way are dropped when they end. Waiting
   * `refresh()` calls resolve. */
  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    for (const u of this.#unlisten.splice(0)) u();
    clearInterval(this.#poll);
    clearTimeout(this.#gapTimer);
    for (const w of this.#waiters.splice(0)) w();
  }

  /** The data changed (an event said so): read again, coalesced, when active. */
  changed(): void {
    if (this.#stopped || !this.#isActive()) return;
    this.#wanted = true;
    this.#kick();
  }

  /** Reads again (whether active or not); resolves once a read that started after this call
   * ended (at once when the store is stopped). Called before the store listens, it is the
   * store's first read, once it listens. */
  refresh(): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    return new Promise((resolve) => {
      this.#waiters.push(resolve);
      this.#wanted = true;
      this.#kick();
    });
  }

  /** Shows `value` without a read (what a command answered, or an event carried); a read
   * under way, started before, is dropped when it ends and one more read follows it. */
  put(value: T): void {
    if (this.#stopped) return;
    this.#epoch++;
    this.#take(value);
    this.error = this.#deaf;
  }

  #isActive(): boolean {
    return this.#opts.active ? untrack(this.#opts.active) : true;
  }

  #take(value: T) {
    this.value = value;
    this.#opts.onValue?.(value);
  }

  #kick() {
    if (!this.#ready || this.#stopped || this.#running || !this.#wanted || this.#gapTimer !== undefined) return;
    const wait = (this.#opts.gapMs ?? 0) - (Date.now() - this.#lastStart);
    if (wait > 0) {
      this.#gapTimer = setTimeout(() => {
        this.#gapTimer = undefined;
        this.#kick();
      }, wait);
      return;
    }
    void this.#run();
  }

  async #run() {
    this.#running = true;
    this.#wanted = false;
    this.#lastStart = Date.now();
    const waiters = this.#waiters.splice(0);
    const epoch = this.#epoch;
    this.loading = true;
    try {
      // Untracked: a read that looks at a view's state must not tie the caller's effect to it.
      const v = await untrack(() => this.#read());
      if (!this.#stopped && epoch === this.#epoch) {
        this.#take(v);
        this.error = this.#deaf;
      } else if (!this.#stopped) {
        // A put came while this read was under way: its data may be older than the put's,
        // but what made it read (an event) may also be newer. Read once more, after the put.
        this.#wanted = true;
      }
    } catch (e) {
      if (!this.#stopped) this.error = toIpcError(e).message;
    } finally {
      this.#running = false;
      for (const w of waiters) w();
      if (this.#wanted && !this.#stopped) this.#kick();
      if (!this.#running) this.loading = false;
    }
  }
}

/**
 * A `Live` store for the component being set up: it starts once the component is mounted and
 * stops when it goes. Call it while the component's script runs (or inside `$effect.root`).
 */
export function live<T>(read: () => Promise<T>, opts: LiveOptions<T> = {}): Live<T> {
  const store = new Live(read, opts);
  $effect(() => {
    untrack(() => void store.start());
    return () => store.stop();
  });
  return store;
}
