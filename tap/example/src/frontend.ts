// The Weather Line's settings: the Switchboard pairing piece in Settings → Extensions.
import { mountSwitchboardPairing } from "switchboard-tap/frontend";

export function setup(ctx: Parameters<typeof mountSwitchboardPairing>[0]) {
  return mountSwitchboardPairing(ctx);
}
