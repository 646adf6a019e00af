// @vitest-environment jsdom
// The empty table under a filter names the filter, says when it was kept from the last
// session, and offers Clear filter as a button the keyboard reaches.
import { describe, expect, it, vi } from "vitest";
import { flushSync, mount, unmount } from "svelte";
import DialTable from "./DialTable.svelte";
import { DialWindow } from "./dialWindow";
import type { HistoryRow } from "../bindings/HistoryRow";

// jsdom has no ResizeObserver; the table only uses it to learn its height.
globalThis.ResizeObserver ??= class {
  observe() {}
  unobserve() {}
  disconnect() {}
} as unknown as typeof ResizeObserver;

function show(props: { filterLine: string; filterKept: boolean; onclearfilter?: () => void }) {
  const target = document.createElement("div");
  document.body.append(target);
  const view = mount(DialTable, {
    target,
    props: {
      win: new DialWindow<HistoryRow>(),
      version: 0,
      selectedKey: null,
      filtered: true,
      loaded: true,
      loading: false,
      phoneNames: {},
      inspecting: false,
      beside: false,
      oninspect: () => {},
      onclose: () => {},
      onrange: () => {},
      ...props,
    },
  });
  flushSync();
  return { target, close: () => { unmount(view); target.remove(); } };
}

describe("the empty table under a filter", () => {
  it("names a filter kept from the last session and clears it with a button", () => {
    const clear = vi.fn();
    const v = show({ filterLine: "op:nosuchop", filterKept: true, onclearfilter: clear });
    const text = v.target.querySelector(".nomatch")!.textContent!.replace(/\s+/g, " ");
    expect(text).toContain("No dials match op:nosuchop.");
    expect(text).toContain("This filter was kept from your last session.");
    const button = [...v.target.querySelectorAll("button")].find((b) => b.textContent === "Clear filter");
    expect(button).toBeDefined();
    expect(button!.tabIndex).toBe(0);
    button!.click();
    expect(clear).toHaveBeenCalledTimes(1);
    // Enter on the button is the button's, not the grid's (it would inspect a row).
    const enter = new KeyboardEvent("keydown", { key: "Enter", bubbles: true, cancelable: true });
    button!.dispatchEvent(enter);
    expect(enter.defaultPrevented).toBe(false);
    v.close();
  });

  it("does not say a filter typed now was kept", () => {
    const v = show({ filterLine: "op:nosuchop", filterKept: false, onclearfilter: () => {} });
    expect(v.target.textContent).toContain("op:nosuchop");
    expect(v.target.textContent).not.toContain("last session");
    v.close();
  });
});
