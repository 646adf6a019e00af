import { describe, expect, it } from "vitest";
import { ago, capabilityLabels, countdown, formatBytes } from "./format";

describe("format", () => {
  it("counts down in seconds and minutes, then says expired", () => {
    expect(countdown(10_500, 0)).toBe("10 s");
    expect(countdown(125_000, 0)).toBe("2 min 05 s");
    expect(countdown(1_000, 1_000)).toBe("expired");
    expect(countdown(0, 5_000)).toBe("expired");
  });

  it("says how long ago", () => {
    const now = 10_000_000;
    expect(ago(null, now)).toBe("never");
    expect(ago(now - 1_000, now)).toBe("just now");
    expect(ago(now - 5 * 60_000, now)).toBe("5 min ago");
    expect(ago(now - 2 * 3_600_000, now)).toBe("2 h ago");
    expect(ago(now - 3 * 86_400_000, now)).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
  });

  it("shortens capability names", () => {
    expect(capabilityLabels([{ type: "tool:messages.send" }, { type: "console" }, "x"])).toEqual([
      "messages.send",
      "console",
      "x",
    ]);
  });
});

describe("formatBytes", () => {
  it("says bytes, KiB and MiB", () => {
    expect(formatBytes(512)).toBe("512 B");
    expect(formatBytes(1536)).toBe("1.5 KiB");
    expect(formatBytes(12 * 1024 * 1024)).toBe("12.0 MiB");
  });
});
