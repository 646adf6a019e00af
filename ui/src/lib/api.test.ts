import { describe, expect, it } from "vitest";
import { api, inTauri, toIpcError } from "./api";

describe("api gateway", () => {
  it("normalises host errors to { kind, message }", () => {
    expect(toIpcError({ kind: "io", message: "disk full" })).toEqual({ kind: "io", message: "disk full" });
    expect(toIpcError(new Error("boom"))).toEqual({ kind: "internal", message: "boom" });
    expect(toIpcError("plain")).toEqual({ kind: "internal", message: "plain" });
  });

  it("says clearly when there is no desktop host", async () => {
    expect(inTauri()).toBe(false);
    await expect(api.appInfo()).rejects.toMatchObject({ kind: "no_host" });
  });
});
