// Pure helpers of the Bridge view: error kinds and reasons in words, copy texts, filtering.
import type { Banner } from "../bindings/Banner";
import type { DialBanner } from "../bindings/DialBanner";
import type { Diagnostic } from "../bindings/Diagnostic";
import type { HostError } from "../bindings/HostError";
import type { PermissionForm } from "../bindings/PermissionForm";
import type { RetireReason } from "../bindings/RetireReason";
import type { ErrorExplanation } from "../bindings/ErrorExplanation";
import type { CallPath } from "../bindings/CallPath";
import type { OpOutcome } from "../bindings/OpOutcome";
import type { PhoneLineOp } from "../bindings/PhoneLineOp";
import { localTime } from "./localTime";

/** The host's permission form in words. */
export function formWords(form: PermissionForm): string {
  switch (form) {
    case "inherit":
      return "no endpoint policy: the requester must hold every permission granted to the owner";
    case "requester":
      return "explicit endpoint policy, requester side";
    case "owner":
      return "explicit endpoint policy, owner side";
  }
}

/** What an error kind means, in one plain sentence. */
export function errorWords(e: HostError): string {
  switch (e.kind) {
    case "permission": {
      const perms = e.permissions.length ? e.permissions.join(", ") : "(no permissions listed)";
      return `Permission check failed on ${e.endpoint}: ${e.missing_extension} is missing ${perms}.`;
    }
    case "not_registered":
      return `Nothing answers at the endpoint ${e.endpoint}: the extension is not installed or not running.`;
    case "not_registered_for_reads":
      return `The extension behind ${e.endpoint} is running, but has no on-request handler for that endpoint, so nothing answers reads there.`;
    case "endpoint_timed_out":
      return `The handler of ${e.endpoint} did not answer in time.`;
    case "dial_timed_out":
      return `LumiAgent's dial to ${e.extension} gave up after ${e.timeout_ms} ms.`;
    case "invalid_endpoint":
      return e.endpoint
        ? `The endpoint name ${e.endpoint} is not valid (it must be "<extension_id>.<channel>" in lowercase letters, digits, "_" and "-").`
        : "The endpoint name was empty.";
    case "invalid_owner":
      return `The owner identifier ${e.owner} is not a valid extension id.`;
    case "not_authorised":
      return "The handler refused the caller (its caller-id check), or the requester's id was missing.";
    case "malformed_request":
      return "The request envelope was unusable (malformed or missing a field).";
    case "unknown_op":
      return unsupportedOpWords(e.op, e.protocol_op, e.follows);
    case "unknown_surface":
      return `The handler has no surface ${e.surface}.`;
    case "invalid_pattern":
      return e.detail
        ? `The line could not use the search pattern: ${e.detail}.`
        : "The line could not use the search pattern.";
    case "module_not_found":
      return `The line has no module ${e.module}.`;
    case "refused_by_extension":
      return e.reason ? `The line refused the request on purpose: ${e.reason}` : "The line refused the request on purpose.";
    case "connection_closed":
      return "The host's connection went away in the middle of the call.";
    case "worker_stopped":
      return "The called extension's process stopped while the call waited (a handler threw synchronously, or the process crashed); Lumiverse does not restart it.";
    case "blocked_capabilities":
      return `Lumiverse's install scanner refused ${e.extension}: its backend uses ${e.capabilities.join(", ")}, which the host blocks. Nothing of it runs.`;
    case "unknown":
      return "Not an error Switchboard recognises; the text is shown as it is.";
  }
}

/**
 * A line's `unknown op: <op>` answer in words: "This line does not support <op>", then what the
 * spec ("Operations") says follows for that op (`follows`, as the core classified it).
 */
export function unsupportedOpWords(op: string, protocolOp: PhoneLineOp | null, follows: OpOutcome): string {
  const name = protocolOp ?? op;
  const head = `This line does not support ${name}`;
  switch (follows) {
    case "pairing_fails":
      return `${head}: describe is the one required op, so LumiAgent cannot pair the line.`;
    case "contributes_nothing":
      return `${head}, so it contributes nothing to LumiAgent's system prompt.`;
    case "allow": {
      const what = protocolOp === "check_read" ? "read" : protocolOp === "check_write" ? "write" : "read or write";
      return `${head}, so LumiAgent allows the ${what} (an unsupported check allows by default).`;
    }
    case "tool_error":
      return protocolOp
        ? `${head}, so the agent's tool call fails with a tool error.`
        : `${head}. It is not an op of the core protocol; the agent tool that dialled it gets a tool error.`;
    case "use_response":
      return `${head}.`;
  }
}

/** A call path as "caller → endpoint" ("unknown caller" when empty). */
export function pathWords(p: CallPath): string {
  return `${p.caller || "unknown caller"} → ${p.endpoint || "unknown endpoint"}`;
}

/** Why a banner left the current list, in words. */
export function retireWords(r: RetireReason): string {
  switch (r) {
    case "call_succeeded":
      return "cleared: a later call on the same path succeeded";
    case "superseded":
      return "replaced by a different permission failure on the same path";
    case "no_longer_actionable":
      return "cleared: a later failure on the same path no longer asked for a grantable permission";
    case "evicted":
      return "dropped to keep the list short";
  }
}

/** A diagnostic (a failed call with no banner) in one or two plain sentences. */
export function diagnosticWords(d: Diagnostic): string {
  const what = errorWords(d.error);
  if (d.reason === "nothing_grantable") {
    return `${what} None of these can be granted (not declared in the extension's manifest: ${d.not_grantable.join(", ")}), so no banner asks for them; the call still failed.`;
  }
  return `${what} Not a permission failure, so no banner.`;
}

/** Why an explained text raises no banner, in words ("" when it raises one). */
export function noBannerWords(x: ErrorExplanation): string {
  if (x.banner) return "";
  if (x.no_banner === "nothing_grantable") {
    return `No banner: ${x.missing_name ?? "the extension"} declares none of ${x.not_grantable.join(", ")}, so none can be granted. The call still failed.`;
  }
  return "No banner: this is not a permission failure. The call failed for another reason (see above).";
}

/** The text the "Copy banner" button puts on the clipboard. */
export function bannerCopyText(b: Banner): string {
  const lines = [b.message, `Fix: ${b.fix}.`];
  if (b.not_grantable.length) {
    lines.push(`Not grantable (not declared in ${b.missing_name}'s manifest; do not ask for them): ${b.not_grantable.join(", ")}`);
  }
  if (!b.manifest_checked) lines.push(`Note: not checked against ${b.missing_name}'s manifest.`);
  lines.push(`Endpoint: ${b.endpoint} (call ${pathWords(b.path)})`);
  lines.push(`Seen ${b.count}× between ${localTime(b.first_seen_ms)} and ${localTime(b.last_seen_ms)}`);
  return lines.join("\n");
}

/** Case-insensitive filter of banners on message, endpoint, extensions and raw text. */
export function filterBanners<T extends Banner>(banners: T[], query: string): T[] {
  const q = query.trim().toLowerCase();
  if (!q) return banners;
  return banners.filter((b) =>
    [b.message, b.endpoint, b.missing_extension, b.missing_name, b.other_name, b.raw_text, ...b.grantable, ...b.not_grantable]
      .some((s) => s.toLowerCase().includes(q)),
  );
}

/** One phone's banners in the Bridge view. */
export interface PhoneGroup<T> {
  /** The phone's device id ("" for results no phone reported, e.g. a demo file). */
  phone: string;
  /** The heading: the phone's label, else its device id. */
  label: string;
  items: T[];
}

/**
 * Banners (or anything with a `phone`) grouped by phone, in the order each phone's first item
 * comes, labelled with the name the phone was paired under (`labels`, by device id). A phone
 * the link does not know is shown by its device id; results without a phone as "No phone".
 */
export function groupByPhone<T extends { phone: string }>(items: T[], labels: Record<string, string>): PhoneGroup<T>[] {
  const groups: PhoneGroup<T>[] = [];
  for (const item of items) {
    let g = groups.find((x) => x.phone === item.phone);
    if (!g) {
      g = { phone: item.phone, label: phoneLabel(item.phone, labels), items: [] };
      groups.push(g);
    }
    g.items.push(item);
  }
  return groups;
}

/** A phone's name for the Bridge view: its label, else its device id, else "No phone". */
export function phoneLabel(phone: string, labels: Record<string, string>): string {
  if (!phone) return "No phone";
  return labels[phone] || phone;
}

/** How many different phones `items` come from. */
export function phoneCount(items: { phone: string }[]): number {
  return new Set(items.map((i) => i.phone)).size;
}

/** Where the dial inspector's banner comes from, in words. */
export function dialBannerWords(d: DialBanner): string {
  if (d.origin === "derived") return "Derived from the error text; not raised by the phone's bridge.";
  const s = d.standing;
  if (!s || s.state === "current") return "Raised by the phone's bridge for this dial; it is a current banner in Bridge status.";
  if (s.state === "retired") return `Raised by the phone's bridge for this dial; no longer current since ${localTime(s.at_ms)} (${retireWords(s.reason)}).`;
  return "Raised by the phone's bridge for this dial; no longer current, and no longer in Bridge status's history (it keeps the latest 100).";
}
