// The calls of the link test (tests/network/tap_node.rs recomputes the same plan from each dial's
// call id): call i of n.

export interface PlannedCall {
  caller: string;
  request: Record<string, unknown>;
  /** Whether LumiRealm lacks `characters` for this call (its read of the request fails). */
  revoked: boolean;
}

export function callPlan(i: number, n: number): PlannedCall {
  const callId = `pl_tap_${i}`;
  const caller = i % 10 === 3 ? "lumiweather" : "lumiagent";
  const revoked = (i >= 400 && i < 450) || i >= n - 10;
  let request: Record<string, unknown>;
  if (i === 0) request = { op: "describe", callId };
  else {
    switch (i % 4) {
      case 0:
        request = { op: "list_items", userId: "u1", surfaceId: "module_envelope", characterId: "char_aria", callId };
        break;
      case 1:
        request = { op: "read_item", userId: "u1", surfaceId: "module_envelope", itemId: "mod_aria_lore", callId };
        break;
      case 2:
        request = { op: "write_field", userId: "u1", surfaceId: "module_envelope", itemId: "mod_aria_lore", field: i % 8 === 2 ? "source" : "lore", value: "x", callId };
        break;
      default:
        request = { op: "grep_items", userId: "u1", surfaceId: "module_envelope", pattern: "Aria", callId };
    }
  }
  return { caller, request, revoked };
}
