import { describe, expect, it } from "vitest";
import { bannerCopyText, dialBannerWords, diagnosticWords, groupByPhone, phoneCount, errorWords, filterBanners, noBannerWords, pathWords, retireWords, unsupportedOpWords } from "./bridge";
import type { Banner } from "../bindings/Banner";
import type { Diagnostic } from "../bindings/Diagnostic";
import type { ErrorExplanation } from "../bindings/ErrorExplanation";

// Times are checked in UTC (vitest runs under Node, which honours TZ set at run time).
declare const process: { env: Record<string, string | undefined> };
process.env.TZ = "UTC";

const spec: Banner = {
  id: "dev_a|lumiagent>lumirealm.phoneline",
  phone: "dev_a",
  serial: 1,
  path: { caller: "lumiagent", endpoint: "lumirealm.phoneline" },
  form: "inherit",
  endpoint: "lumirealm.phoneline",
  missing_extension: "lumiagent",
  missing_name: "LumiAgent",
  other_extension: "lumirealm",
  other_name: "LumiRealm",
  grantable: ["push_notification"],
  not_grantable: [],
  manifest_checked: true,
  message: "LumiAgent is missing push_notification, required for LumiRealm communication.",
  fix: "In Lumiverse, open Extensions, then LumiAgent, and grant push_notification",
  raw_text: 'Shared RPC endpoint "lumirealm.phoneline" requires requester "lumiagent" to inherit owner "lumirealm" permissions: push_notification',
  first_seen_ms: 1_726_000_000_000,
  last_seen_ms: 1_726_000_060_000,
  count: 3,
};

const probe: Banner = {
  ...spec,
  id: "lumirealm>lumiagent.phoneline_probe",
  path: { caller: "lumirealm", endpoint: "lumiagent.phoneline_probe" },
  endpoint: "lumiagent.phoneline_probe",
  missing_extension: "lumirealm",
  missing_name: "LumiRealm",
  other_name: "LumiAgent",
  grantable: ["characters", "chats"],
  not_grantable: ["mcp_servers", "mcp_servers.create"],
  message: "LumiRealm is missing characters, chats, required for LumiAgent communication.",
  fix: "In Lumiverse, open Extensions, then LumiRealm, and grant characters, chats",
  raw_text: 'Shared RPC endpoint "lumiagent.phoneline_probe" requires requester "lumirealm" to inherit owner "lumiagent" permissions: mcp_servers, characters, chats, mcp_servers.create',
};

describe("bridge words", () => {
  it("copies the banner with its fix, endpoint and local times", () => {
    const t = bannerCopyText(spec);
    expect(t.split("\n")).toEqual([
      "LumiAgent is missing push_notification, required for LumiRealm communication.",
      "Fix: In Lumiverse, open Extensions, then LumiAgent, and grant push_notification.",
      "Endpoint: lumirealm.phoneline (call lumiagent → lumirealm.phoneline)",
      "Seen 3× between 2024-09-10 20:26:40 and 2024-09-10 20:27:40",
    ]);
  });

  it("lists not-grantable permissions apart, never in the fix", () => {
    const t = bannerCopyText(probe);
    expect(t).toContain("Not grantable (not declared in LumiRealm's manifest; do not ask for them): mcp_servers, mcp_servers.create");
    expect(t.split("\n")[1]).not.toContain("mcp");
  });

  it("filters banners on any of their words", () => {
    expect(filterBanners([spec, probe], "mcp")).toEqual([probe]);
    expect(filterBanners([spec, probe], "PUSH")).toEqual([spec]);
    expect(filterBanners([spec, probe], "  ")).toEqual([spec, probe]);
  });

  it("says every error kind in words with its values", () => {
    const base = { wrapped_by: [], text: "" };
    expect(errorWords({ ...base, kind: "not_registered", endpoint: "x.y" })).toContain("x.y");
    expect(errorWords({ ...base, kind: "dial_timed_out", extension: "lumirealm", timeout_ms: 15000 })).toBe(
      "LumiAgent's dial to lumirealm gave up after 15000 ms.",
    );
    expect(errorWords({ ...base, kind: "invalid_endpoint", endpoint: "" })).toBe("The endpoint name was empty.");
    expect(errorWords({ ...base, kind: "unknown_op", op: "set_weather", protocol_op: null, follows: "tool_error" })).toContain("set_weather");
    expect(errorWords({ ...base, kind: "invalid_owner", owner: "Lumi_Realm" })).toContain("Lumi_Realm");
    expect(errorWords({ ...base, kind: "module_not_found", module: "risu_7" })).toBe("The line has no module risu_7.");
    expect(errorWords({ ...base, kind: "invalid_pattern", detail: "" })).toBe("The line could not use the search pattern.");
    expect(errorWords({ ...base, kind: "refused_by_extension", reason: "frozen layer" })).toContain("frozen layer");
    expect(errorWords({ ...base, kind: "permission", form: "owner", endpoint: "a.b", missing_extension: "a", owner: "a", permissions: [] })).toContain(
      "(no permissions listed)",
    );
  });

  it("tells not registered apart from not registered for on-request reads", () => {
    const base = { wrapped_by: [], text: "" };
    const plain = errorWords({ ...base, kind: "not_registered", endpoint: "lumirealm.phoneline" });
    const reads = errorWords({ ...base, kind: "not_registered_for_reads", endpoint: "lumirealm.phoneline" });
    expect(plain).toContain("not installed or not running");
    expect(reads).toContain("is running, but has no on-request handler");
    expect(reads).not.toContain("not installed");
  });

  it("says an unsupported op is not supported by this line, and what the spec says follows", () => {
    const base = { wrapped_by: [], text: "", kind: "unknown_op" as const };
    expect(errorWords({ ...base, op: "system_prompt", protocol_op: "system_prompt", follows: "contributes_nothing" })).toBe(
      "This line does not support system_prompt, so it contributes nothing to LumiAgent's system prompt.",
    );
    expect(errorWords({ ...base, op: "check_read", protocol_op: "check_read", follows: "allow" })).toBe(
      "This line does not support check_read, so LumiAgent allows the read (an unsupported check allows by default).",
    );
    expect(errorWords({ ...base, op: "check_write", protocol_op: "check_write", follows: "allow" })).toContain("allows the write");
    for (const op of ["list_items", "read_item", "write_field", "grep_items"] as const) {
      expect(errorWords({ ...base, op, protocol_op: op, follows: "tool_error" })).toBe(
        `This line does not support ${op}, so the agent's tool call fails with a tool error.`,
      );
    }
    expect(errorWords({ ...base, op: "describe", protocol_op: "describe", follows: "pairing_fails" })).toContain("cannot pair the line");
    // The protocol op's name is used when the text carried more after it.
    expect(unsupportedOpWords("check_read (lumirealm)", "check_read", "allow")).toMatch(/^This line does not support check_read,/);
    expect(unsupportedOpWords("asset_mutate", null, "tool_error")).toBe(
      "This line does not support asset_mutate. It is not an op of the core protocol; the agent tool that dialled it gets a tool error.",
    );
  });

  it("explains diagnostics and missing banners", () => {
    const d: Diagnostic = {
      phone: "dev_a",
      path: { caller: "lumirealm", endpoint: "lumiagent.phoneline_probe" },
      reason: "nothing_grantable",
      error: { kind: "permission", form: "inherit", endpoint: "lumiagent.phoneline_probe", missing_extension: "lumirealm", owner: "lumiagent", permissions: ["mcp_servers"], wrapped_by: [], text: "" },
      not_grantable: ["mcp_servers"],
      first_seen_ms: 1,
      last_seen_ms: 1,
      count: 1,
    };
    expect(diagnosticWords(d)).toContain("None of these can be granted");
    expect(diagnosticWords({ ...d, reason: "not_permission", error: { kind: "connection_closed", wrapped_by: [], text: "Connection closed" } })).toBe(
      "The host's connection went away in the middle of the call. Not a permission failure, so no banner.",
    );
    const x: ErrorExplanation = {
      what_to_do: null,
      classification: d.error,
      path: d.path,
      banner: null,
      no_banner: "nothing_grantable",
      missing_name: "LumiRealm",
      not_grantable: ["mcp_servers"],
      manifest_known: true,
      known_manifests: ["lumiagent", "lumirealm"],
    };
    expect(noBannerWords(x)).toBe("No banner: LumiRealm declares none of mcp_servers, so none can be granted. The call still failed.");
    expect(noBannerWords({ ...x, banner: spec, no_banner: null })).toBe("");
    expect(pathWords({ caller: "", endpoint: "x.y" })).toBe("unknown caller → x.y");
    expect(retireWords("call_succeeded")).toContain("succeeded");
  });
});

describe("banners per phone", () => {
  const b = { ...spec, id: "dev_b|lumiagent>lumirealm.phoneline", phone: "dev_b", serial: 2 };
  it("groups by phone in first-seen order, with the paired label or the device id", () => {
    const groups = groupByPhone([spec, b, { ...probe, phone: "dev_a" }], { dev_a: "Pixel" });
    expect(groups.map((g) => [g.phone, g.label, g.items.length])).toEqual([
      ["dev_a", "Pixel", 2],
      ["dev_b", "dev_b", 1],
    ]);
    expect(groupByPhone([{ ...spec, phone: "" }], {})[0].label).toBe("No phone");
    expect(phoneCount([spec, b, spec])).toBe(2);
    expect(phoneCount([spec])).toBe(1);
  });
  it("says where the inspector's banner comes from", () => {
    expect(dialBannerWords({ banner: spec, origin: "derived", standing: null })).toBe(
      "Derived from the error text; not raised by the phone's bridge.",
    );
    expect(dialBannerWords({ banner: spec, origin: "raised_by_hub", standing: { state: "current" } })).toContain("current banner");
    expect(
      dialBannerWords({ banner: spec, origin: "raised_by_hub", standing: { state: "retired", reason: "call_succeeded", at_ms: 1_726_000_000_000 } }),
    ).toBe("Raised by the phone's bridge for this dial; no longer current since 2024-09-10 20:26:40 (cleared: a later call on the same path succeeded).");
  });
});
