import { describe, expect, it } from "vitest";
import { VIEWS, viewForArrow, viewForShortcut, viewFromHash } from "./nav";

describe("navigation", () => {
  it("has the six views in sidebar order", () => {
    expect(VIEWS.map((v) => v.label)).toEqual([
      "Phones",
      "Phone lines",
      "Bridge status",
      "Live dials",
      "Confirmations",
      "Settings",
    ]);
  });

  it("maps Ctrl/Cmd+digit to a view and ignores plain digits and Alt", () => {
    expect(viewForShortcut({ key: "4", ctrlKey: true })).toBe("dials");
    expect(viewForShortcut({ key: "6", metaKey: true })).toBe("settings");
    expect(viewForShortcut({ key: "4" })).toBeNull();
    expect(viewForShortcut({ key: "4", ctrlKey: true, altKey: true })).toBeNull();
    expect(viewForShortcut({ key: "9", ctrlKey: true })).toBeNull();
  });

  it("moves with arrows, wrapping at both ends", () => {
    expect(viewForArrow("phones", "ArrowDown")).toBe("phone-lines");
    expect(viewForArrow("phones", "ArrowUp")).toBe("settings");
    expect(viewForArrow("settings", "ArrowDown")).toBe("phones");
    expect(viewForArrow("dials", "Home")).toBe("phones");
    expect(viewForArrow("dials", "End")).toBe("settings");
    expect(viewForArrow("dials", "x")).toBeNull();
  });

  it("reads the view from the hash", () => {
    expect(viewFromHash("#/confirmations")).toBe("confirmations");
    expect(viewFromHash("")).toBe("phones");
    expect(viewFromHash("#/nope")).toBe("phones");
  });
});
