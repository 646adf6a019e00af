import { describe, expect, it } from "vitest";
import { compile } from "svelte/compiler";
import { DETAILS_BELOW_MAX_WIDTH, detailsBelow } from "./confirmations";
import source from "../views/Confirmations.svelte?raw";

// The fresh user's sixth bug: at a 760 px wide window the Confirmations view's detail panel was
// unreadable (two columns of at least 280 + 320 px beside the 220 px sidebar). Read the view's
// compiled CSS: under 1100 px (as Live dials does) the details go under the lists, one column,
// and the panel is no longer a sticky box of its own height.
const css = compile(source, { filename: "Confirmations.svelte", css: "external" }).css?.code ?? "";

/** The rules inside `@media (max-width: 1100px)`, and where that block starts. */
function narrow(): { at: number; body: string } {
  const at = css.search(/@media\s*\(max-width:\s*1100px\)\s*\{/);
  if (at < 0) return { at, body: "" };
  let depth = 0;
  const start = css.indexOf("{", at);
  for (let i = start; i < css.length; i++) {
    if (css[i] === "{") depth++;
    if (css[i] === "}" && --depth === 0) return { at, body: css.slice(start + 1, i) };
  }
  return { at, body: "" };
}

describe("Confirmations layout", () => {
  it("puts the detail panel under the lists in a narrow window", () => {
    const { at, body } = narrow();
    expect(at, "a max-width: 1100px rule").toBeGreaterThanOrEqual(0);
    expect(body).toMatch(/\.layout\.svelte-[a-z0-9]+\s*\{[^}]*grid-template-columns:\s*minmax\(0,\s*1fr\)\s*;?[^}]*\}/);
    expect(body).toMatch(/\.detail\.svelte-[a-z0-9]+\s*\{[^}]*position:\s*static[^}]*\}/);
  });

  it("comes after the wide rules it overrides (same specificity: the later one wins)", () => {
    const { at } = narrow();
    const wideDetail = css.search(/\.detail\.svelte-[a-z0-9]+\s*\{[^}]*position:\s*sticky/);
    const wideLayout = css.search(/\.layout\.svelte-[a-z0-9]+\s*\{[^}]*minmax\(280px/);
    expect(wideDetail).toBeGreaterThanOrEqual(0);
    expect(wideLayout).toBeGreaterThanOrEqual(0);
    expect(at).toBeGreaterThan(wideDetail);
    expect(at).toBeGreaterThan(wideLayout);
  });

  it("brings the details into view when they are under the lists, at the rule's own width", () => {
    expect(css).toContain(`@media (max-width: ${DETAILS_BELOW_MAX_WIDTH}px)`);
    expect(detailsBelow(760)).toBe(true);
    expect(detailsBelow(DETAILS_BELOW_MAX_WIDTH)).toBe(true);
    expect(detailsBelow(1180)).toBe(false);
  });
});
