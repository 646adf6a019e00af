// @vitest-environment jsdom
// The filter line's shortcut boxes say what the table is filtered by: while the typed line does
// not parse, the table keeps the last valid filter and the boxes keep its values.
import { describe, expect, it } from "vitest";
import { flushSync, mount, unmount } from "svelte";
import DialFilterLine from "./DialFilterLine.svelte";

function boxes(target: HTMLElement) {
  const value = (label: string) => target.querySelector<HTMLInputElement>(`input[aria-label^="${label}"]`)!.value;
  return { op: value("Op"), phone: value("Phone"), slow: target.querySelector<HTMLInputElement>(".toggles input")!.checked };
}

describe("filter shortcut boxes", () => {
  it("keep the last valid filter's values while the line is invalid", () => {
    const target = document.createElement("div");
    document.body.append(target);
    const props = $state({
      line: 'duration>abc op:"unterminated',
      applied: "op:read_item duration>1s",
      error: { message: "unterminated quote", start: 16, end: 29 } as { message: string; start: number; end: number } | null,
    });
    const view = mount(DialFilterLine, {
      target,
      props: {
        get line() { return props.line; },
        set line(v: string) { props.line = v; },
        get applied() { return props.applied; },
        get error() { return props.error; },
        regex: false,
        checking: false,
        onedit: () => {},
        onapply: () => {},
        ontoggleregex: () => {},
      },
    });
    flushSync();
    expect(target.textContent).toContain("The table still shows the last valid filter");
    expect(boxes(target)).toEqual({ op: "read_item", phone: "", slow: true });
    // Valid again: the boxes follow the line as typed.
    props.line = 'op:"write_item" phone:Pixel';
    props.error = null;
    flushSync();
    expect(boxes(target)).toEqual({ op: "write_item", phone: "Pixel", slow: false });
    unmount(view);
    target.remove();
  });
});
