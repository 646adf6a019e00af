import { describe, expect, it } from "vitest";
import { FLAGS, fieldOf, freeText, hasFlag, hasRegex, markError, quoteValue, regexTerm, tokenizeLine, withField, withFlag, withRegex } from "./filterLine";

const EXAMPLE = 'op:read_item caller:lumiagent -outcome:ok duration>1s phone:"Demo phone" spec:broken word';

describe("tokenizing the filter line", () => {
  it("finds every term of the issue's example, with its place", () => {
    const t = tokenizeLine(EXAMPLE);
    expect(t.map((x) => [x.neg, x.key, x.op, x.value])).toEqual([
      [false, "op", ":", "read_item"],
      [false, "caller", ":", "lumiagent"],
      [true, "outcome", ":", "ok"],
      [false, "duration", ">", "1s"],
      [false, "phone", ":", "Demo phone"],
      [false, "spec", ":", "broken"],
      [false, null, null, "word"],
    ]);
    for (const x of t) expect(EXAMPLE.slice(x.start, x.end)).not.toMatch(/^\s|\s$/);
    expect(EXAMPLE.slice(t[4].start, t[4].end)).toBe('phone:"Demo phone"');
  });
  it("reads comparisons, escapes, unclosed quotes and a lone dash", () => {
    const t = tokenizeLine('duration>=250ms time<"2025-10-09 14:00" "say \\"hi\\"" "open - x');
    expect(t.map((x) => [x.key, x.op, x.value])).toEqual([
      ["duration", ">=", "250ms"],
      ["time", "<", "2025-10-09 14:00"],
      [null, null, 'say "hi"'],
      [null, null, "open - x"],
    ]);
    expect(tokenizeLine("- a").map((x) => [x.neg, x.value])).toEqual([[false, "-"], [false, "a"]]);
    expect(tokenizeLine("   ")).toEqual([]);
  });
  it("quotes values only when needed, so they read back the same", () => {
    for (const v of ["read_item", "Demo phone", 'a"b', "back\\slash", "-lead", ""]) {
      const line = `op:${quoteValue(v)}`;
      expect(fieldOf(line, "op")).toBe(v);
    }
    expect(quoteValue("read_item")).toBe("read_item");
    expect(quoteValue("Demo phone")).toBe('"Demo phone"');
  });
  it("collects the free text", () => {
    expect(freeText(EXAMPLE)).toBe("word");
    expect(freeText('a "b c" op:x -d')).toBe("a b c -d");
  });
});

describe("shortcut boxes write into the line", () => {
  it("replace a term in place, keep the rest as typed", () => {
    expect(withField(EXAMPLE, "op", "list_items")).toBe(EXAMPLE.replace("op:read_item", "op:list_items"));
    expect(withField(EXAMPLE, "phone", "Pixel 8")).toBe(EXAMPLE.replace('"Demo phone"', '"Pixel 8"'));
  });
  it("add a term at the end and remove it when emptied", () => {
    const l = withField("word", "callee", "lumirealm");
    expect(l).toBe("word callee:lumirealm");
    expect(withField(l, "callee", "")).toBe("word");
    expect(withField("", "op", "read_item")).toBe("op:read_item");
    expect(withField("op:a op:b word", "op", "c")).toBe("op:c word");
  });
  it("leave negated terms and other comparisons alone", () => {
    expect(withField("-op:describe word", "op", "read_item")).toBe("-op:describe word op:read_item");
    expect(fieldOf("-op:describe", "op")).toBe("");
  });
  it("keep what a person types, spaces included, until it is emptied", () => {
    let l = "";
    for (const typed of ["D", "De", "Demo", "Demo ", "Demo p", "Demo phone"]) {
      l = withField(l, "phone", typed);
      expect(fieldOf(l, "phone")).toBe(typed);
    }
    expect(l).toBe('phone:"Demo phone"');
    expect(withField(l, "phone", "   ")).toBe("");
  });
  it("check boxes add their term once and remove every copy", () => {
    let l = withFlag("op:x", FLAGS.slow, true);
    expect(l).toBe("op:x duration>1s");
    expect(hasFlag(l, FLAGS.slow)).toBe(true);
    expect(withFlag(l, FLAGS.slow, true)).toBe(l);
    l = withFlag(l + " duration>1s", FLAGS.slow, false);
    expect(l).toBe("op:x");
    expect(hasFlag("spec:BROKEN", FLAGS.notToSpec)).toBe(true);
    expect(hasFlag("-spec:broken", FLAGS.notToSpec)).toBe(false);
    expect(withFlag("duration>2s", FLAGS.slow, false)).toBe("duration>2s");
  });
  it("round-trip a random mix of terms through the boxes", () => {
    // The boxes read the line they wrote, whatever else the line holds.
    let seed = 7;
    const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) % n);
    const keys = ["op", "caller", "callee", "phone", "outcome"];
    const values = ["a", "read_item", "Demo phone", 'q"uote', "x y z", "-neg"];
    for (let k = 0; k < 300; k++) {
      let line = ["word", "-op:zzz", "duration>1s", '"free text"'].slice(0, rnd(5)).join(" ");
      const want: Record<string, string> = {};
      for (let s = 0; s < 6; s++) {
        const key = keys[rnd(keys.length)];
        const v = rnd(4) === 0 ? "" : values[rnd(values.length)];
        line = withField(line, key, v);
        want[key] = v;
      }
      for (const [key, v] of Object.entries(want)) expect(fieldOf(line, key)).toBe(v);
      expect(fieldOf(line, "op") === "zzz").toBe(false);
    }
  });
});

describe("the regex toggle writes into the line", () => {
  it("turns each free-text term into its own /.../i term and back", () => {
    const on = withRegex("op:read_item item_[0-9]+ -noise", true);
    expect(on).toBe("op:read_item /item_[0-9]+/i -noise");
    expect(hasRegex(on)).toBe(true);
    expect(withRegex(on, false)).toBe("op:read_item item_[0-9]+ -noise");
    expect(withRegex("/a b/i", false)).toBe('"a b"');
    expect(withRegex("op:x", true)).toBe("op:x");
  });
  it("keeps asking for every word: words stay separate terms, and twice gives the line back", () => {
    // The new user's line: two words ANDed must not become one pattern "lumirealm extension".
    const line = "lumirealm op:describe extension";
    const on = withRegex(line, true);
    expect(on).toBe("/lumirealm/i op:describe /extension/i");
    expect(withRegex(on, false)).toBe(line);
    expect(withRegex('"two words" x', true)).toBe("/two words/i /x/i");
    expect(withRegex(withRegex('"two words" x', true), false)).toBe('"two words" x');
  });
  it("reads regex terms with escaped slashes and leaves them alone in the boxes", () => {
    const t = tokenizeLine("/a\\/b\\d/i op:x");
    expect(t[0]).toMatchObject({ regex: true, ignoreCase: true, value: "a/b\\d", start: 0, end: 9 });
    expect(fieldOf("/op:x/ op:y", "op")).toBe("y");
    expect(regexTerm("a/b")).toBe("/a\\/b/i");
  });
});

describe("an error's place", () => {
  it("counts characters as the CLI's column does, an emoji being one", () => {
    // "🎉x colour:x": the core marks `colour` at UTF-16 index 4, the CLI says column 4.
    const m = markError("🎉x colour:x", 4, 10);
    expect(m).toEqual({ before: "🎉x ", at: "colour", after: ":x", character: 4 });
    expect(markError("op:x colour:red", 5, 11).character).toBe(6);
    // A place past the end (the line was edited since) is clamped and still marked.
    expect(markError("ab", 9, 12)).toEqual({ before: "ab", at: " ", after: "", character: 3 });
  });
});
