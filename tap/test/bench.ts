// Overhead of tap.wrap per call, against the bare handler in the same run.
//   npm run bench            (or: node dist/test/bench.js [calls])
// Each variant serves the same LumiRealm-like calls (read_item through a fake host's request
// channel), in alternating blocks so both see the same machine load. Per call it times what
// the caller waits for (invoke → the handler's promise settles) and prints p50 and p99. The
// tap records after the result is returned (setImmediate), so the recording's own cost is
// printed apart: the wall time of all calls including the recording, per call. The desktop is
// away (every connection refused), so every dial stays in the outbox (bounded at 10 000) and the
// state is written to the extension's storage (a temp folder here) every 200 ms: the tap's
// heaviest steady state.

import { performance } from "node:perf_hooks";
import { createTap } from "../src/index.js";
import { freshIdentity, saveKey, saveState } from "../src/store.js";
import { FakeHost, lumirealmHandler } from "./fake-host.js";

const calls = Number(process.argv[2] ?? 20_000);
const block = 500;

async function setup(wrapped: boolean) {
  const host = new FakeHost();
  host.grant("lumirealm", "characters");
  host.grant("lumiagent", "characters");
  host.spindleFor("lumiagent").rpcPool.sync(
    "phoneline_request",
    { op: "read_item", userId: "u1", surfaceId: "module_envelope", itemId: "mod_aria_lore", callId: "pl_bench_1" },
    { requires: ["characters"] },
  );
  const spindle = host.spindleFor("lumirealm");
  let tap = null;
  let handler = lumirealmHandler(spindle);
  if (wrapped) {
    const { state, key } = freshIdentity("bench");
    state.desktop = { host: "127.0.0.1", port: 9, cert_fp: "0".repeat(64), cert_pem: "", public_key: "A".repeat(43), device_id: "dev_0000000000000000", binding: "pinned" };
    state.enclave_user = "user_owner";
    await saveKey(host.ext("lumirealm").enclave, key, "user_owner");
    await saveState(host.ext("lumirealm").storage, state);
    const t = createTap({
      line: { identifier: "lumirealm", name: "LumiRealm" },
      spindle,
      backoffMs: { initial: 3_600_000, max: 3_600_000 },
      log: () => {},
      persistEveryMs: Number(process.env.TAP_BENCH_PERSIST_MS ?? 200),
      socketFactory: () => {
        throw new Error("connect ECONNREFUSED 127.0.0.1:9");
      },
    });
    await t.ready;
    tap = t;
    handler = t.wrap(handler) as typeof handler;
  }
  return { handler, tap };
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
const us = (ms: number) => `${(ms * 1000).toFixed(1)} µs`;

async function main() {
  const bare = await setup(false);
  const tapped = await setup(true);
  const rctx = { requesterExtensionId: "lumiagent" };
  const times = { bare: [] as number[], wrapped: [] as number[] };
  const wall = { bare: 0, wrapped: 0 };
  // Warm-up.
  for (let i = 0; i < 2000; i++) {
    await bare.handler(rctx);
    await tapped.handler(rctx);
  }
  await new Promise((r) => setImmediate(r));
  for (let done = 0; done < calls; done += block) {
    for (const name of ["bare", "wrapped"] as const) {
      const h = name === "bare" ? bare.handler : tapped.handler;
      for (let i = 0; i < block; i++) {
        const t0 = performance.now();
        await h(rctx);
        times[name].push(performance.now() - t0);
      }
      await new Promise((r) => setImmediate(r));
      // The same again without per-call timers: wall time, the deferred recording included.
      const w0 = performance.now();
      for (let i = 0; i < block; i++) await h(rctx);
      await new Promise((r) => setImmediate(r));
      wall[name] += performance.now() - w0;
    }
  }
  await tapped.tap?.stop();
  const n = times.bare.length;
  for (const name of ["bare", "wrapped"] as const) times[name].sort((a, b) => a - b);
  console.log(`switchboard-tap overhead, ${n} calls each, Node ${process.version}`);
  console.log(`  bare handler    p50 ${us(pct(times.bare, 50))}  p99 ${us(pct(times.bare, 99))}  wall per call (incl. recording) ${us(wall.bare / n)}`);
  console.log(`  tap.wrap        p50 ${us(pct(times.wrapped, 50))}  p99 ${us(pct(times.wrapped, 99))}  wall per call (incl. recording) ${us(wall.wrapped / n)}`);
  console.log(
    `  overhead        p50 +${us(pct(times.wrapped, 50) - pct(times.bare, 50))}  p99 +${us(pct(times.wrapped, 99) - pct(times.bare, 99))}  wall +${us((wall.wrapped - wall.bare) / n)}`,
  );
}

main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exit(1);
});
