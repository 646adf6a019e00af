// Small, pure formatting helpers shared by the views (unit-tested).

import { localTime } from "./localTime";

/** "12 s", "1 min 05 s" until `targetMs` from `nowMs`; "expired" at or after it. */
export function countdown(targetMs: number, nowMs: number): string {
  const left = Math.floor((targetMs - nowMs) / 1000);
  if (left <= 0) return "expired";
  if (left < 60) return `${left} s`;
  const m = Math.floor(left / 60);
  const s = left % 60;
  return `${m} min ${String(s).padStart(2, "0")} s`;
}

/** "just now", "5 min ago", "3 h ago", or the local date and time (`2026-11-29 14:03:07`, as
 * every view writes times) for older ones; "never" for null. */
export function ago(ms: number | null | undefined, nowMs: number): string {
  if (ms === null || ms === undefined) return "never";
  const d = Math.max(0, nowMs - ms);
  if (d < 45_000) return "just now";
  if (d < 3_600_000) return `${Math.round(d / 60_000)} min ago`;
  if (d < 86_400_000) return `${Math.round(d / 3_600_000)} h ago`;
  return localTime(ms);
}

/** Capability values as short labels (`tool:messages.send` -> `messages.send`). */
export function capabilityLabels(caps: unknown[]): string[] {
  return caps
    .map((c) => (c && typeof c === "object" && "type" in c ? String((c as { type: unknown }).type) : String(c)))
    .map((t) => t.replace(/^tool:/, ""));
}

/** A size in bytes for people: `512 B`, `1.5 KiB`, `12.0 MiB`. */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MiB`;
}
