// Local-time formatting for epoch-millisecond timestamps (pure; no Tauri).

const pad = (n: number, w = 2) => String(n).padStart(w, "0");

/** `YYYY-MM-DD HH:MM:SS` in the computer's local time zone; "—" for null or a non-finite value. */
export function localTime(ms: number | null | undefined): string {
  if (ms == null || !Number.isFinite(ms)) return "—";
  const d = new Date(ms);
  if (Number.isNaN(d.getTime())) return "—";
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** How long before `now` the time `ms` was, in rough words: "just now", "5 min ago", "3 h ago", "2 days ago"; "in the future" when after `now`. */
export function ago(ms: number, now: number): string {
  const s = Math.round((now - ms) / 1000);
  if (s < -5) return "in the future";
  if (s < 45) return "just now";
  const m = Math.round(s / 60);
  if (m < 60) return `${m} min ago`;
  const h = Math.round(m / 60);
  if (h < 36) return `${h} h ago`;
  const days = Math.round(h / 24);
  return `${days} day${days === 1 ? "" : "s"} ago`;
}
