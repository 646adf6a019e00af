// The pairing piece for an extension's settings UI (the browser side; import it from
// `switchboard-tap/frontend` in your `src/frontend.ts`). It talks to the tap in your backend
// through the host's frontend↔backend messages (`ctx.sendToBackend` / `ctx.onBackendMessage`;
// the backend side is `createTap`, which listens with `spindle.onFrontendMessage`). The person
// pastes the desktop's pairing link, compares the verification code with the desktop's and
// confirms on both screens; the piece then shows the state: paired with which desktop,
// connected or not, how many calls wait, the last error.
//
// No runtime imports: it bundles for the browser (`bun build src/frontend.ts --target browser`)
// and needs nothing but the DOM (the one import is a type, erased when bundled).

import type { PairingStatus } from "./tap.js";

/** The part of the host's frontend context the piece uses. */
export interface FrontendCtxLike {
  sendToBackend(payload: unknown): void;
  onBackendMessage(handler: (payload: unknown) => void): (() => void) | void;
  ui?: { mount(point: string): HTMLElement };
}

/** The backend's status message (`PairingStatus`, the one shape both sides use). */
type Status = PairingStatus & { switchboardTap: "status" };

const STEPS: Record<string, string> = {
  certificate: "Checking the desktop's certificate…",
  request: "Asking the desktop…",
  code: "Compare the codes",
  waiting_desktop: "Waiting for “Codes match” on the desktop…",
};

/** Mounts the pairing piece into `root` (default: the host's Settings → Extensions mount,
 * `ctx.ui.mount("settings_extensions")`). Returns a function that removes it. */
export function mountSwitchboardPairing(ctx: FrontendCtxLike, root?: HTMLElement): () => void {
  const host = root ?? ctx.ui?.mount("settings_extensions");
  if (!host) throw new Error("switchboard-tap/frontend: pass an element to mount into (ctx.ui.mount is missing)");
  const box = el("section", { "aria-label": "Switchboard" });
  box.style.cssText = "display:flex;flex-direction:column;gap:8px;padding:12px 0;font:inherit";
  const title = el("h3", {}, "Switchboard");
  title.style.margin = "0";
  const state = el("p", { role: "status", "data-switchboard": "state" }, "Asking the extension…");
  state.style.margin = "0";
  const error = el("p", { role: "alert", "data-switchboard": "error" });
  error.style.cssText = "margin:0;color:#c33";
  const form = el("form", {});
  form.style.cssText = "display:flex;gap:6px;flex-wrap:wrap";
  const input = el("input", { type: "text", placeholder: "switchboard://pair?addr=…", "aria-label": "Pairing link", autocomplete: "off", spellcheck: "false" }) as HTMLInputElement;
  input.style.cssText = "flex:1 1 24em;min-width:12em";
  const pairBtn = el("button", { type: "submit" }, "Pair") as HTMLButtonElement;
  form.append(input, pairBtn);
  const confirmBox = el("div", { "data-switchboard": "confirm" });
  confirmBox.style.cssText = "display:none;flex-direction:column;gap:6px";
  const code = el("p", { "aria-label": "Verification code" });
  code.style.cssText = "margin:0;font-size:1.6em;font-family:monospace;letter-spacing:0.1em";
  const ask = el("p", {}, "Does the desktop show the same code? Confirm here and on the desktop (“Codes match”).");
  ask.style.margin = "0";
  const buttons = el("div", {});
  buttons.style.cssText = "display:flex;gap:6px";
  const yes = el("button", { type: "button" }, "Codes match") as HTMLButtonElement;
  const no = el("button", { type: "button" }, "They differ") as HTMLButtonElement;
  buttons.append(yes, no);
  confirmBox.append(code, ask, buttons);
  const help = el("p", {}, "On the desktop: Phones → “Pair a phone” shows the pairing link. Paste it here.");
  help.style.cssText = "margin:0;opacity:0.75";
  // Hosts reset button styles (Lumiverse draws a bare button as plain text): give each one an
  // outline so it reads as something to press.
  for (const b of [pairBtn, yes, no]) b.style.cssText = BUTTON;
  yes.style.fontWeight = "600";
  box.append(title, state, error, form, confirmBox, help);
  host.appendChild(box);

  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const link = input.value.trim();
    if (!link) {
      error.textContent = "Paste the pairing link the desktop shows (switchboard://pair?…).";
      return;
    }
    ctx.sendToBackend({ switchboardTap: "pair", link });
  });
  yes.addEventListener("click", () => ctx.sendToBackend({ switchboardTap: "confirm", codesMatch: true }));
  no.addEventListener("click", () => ctx.sendToBackend({ switchboardTap: "confirm", codesMatch: false }));

  const show = (s: Status) => {
    const p = s.pairing;
    if (p) {
      state.textContent = STEPS[p.step] ?? p.step;
      const codeStep = p.step === "code" && typeof p.code === "string";
      confirmBox.style.display = codeStep ? "flex" : "none";
      code.textContent = codeStep ? (p.code as string) : "";
      pairBtn.disabled = true;
    } else {
      confirmBox.style.display = "none";
      pairBtn.disabled = false;
      state.textContent = s.paired
        ? `Paired with ${s.desktop} as “${s.label}” (${s.deviceId}) · ${s.connected ? "connected" : "not connected"} · ${s.queued} waiting`
        : `Not paired · ${s.queued} call(s) kept until you pair`;
      if (s.paired) pairBtn.textContent = "Pair again";
    }
    error.textContent = s.lastError ?? "";
  };
  const off = ctx.onBackendMessage((payload) => {
    if (payload && typeof payload === "object" && (payload as { switchboardTap?: unknown }).switchboardTap === "status") show(payload as Status);
  });
  ctx.sendToBackend({ switchboardTap: "status" });
  return () => {
    if (typeof off === "function") off();
    box.remove();
  };
}

const BUTTON = "padding:4px 14px;border:1px solid currentColor;border-radius:6px;background:transparent;color:inherit;cursor:pointer;font:inherit";

function el(tag: string, attrs: Record<string, string>, text?: string): HTMLElement {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}
