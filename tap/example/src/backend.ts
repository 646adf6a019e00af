// The Weather Line's backend, as the Lumiverse host builds it (`bun build src/backend.ts
// --target bun`): a phone line with switchboard-tap on.
import { createTap, type SpindleLike } from "switchboard-tap";
import { weatherHandler } from "./weather.js";

declare const spindle: SpindleLike & { rpcPool: { handle: (endpoint: string, handler: (rctx: any) => unknown) => void } };

// Who may dial this line (LumiAgent; `caller` is the host lab's stand-in for it).
const ALLOWED_CALLERS = new Set(["lumiagent", "caller"]);

const tap = createTap({ line: { identifier: "weatherline", name: "Weather Line", permissions: ["characters"] }, spindle });
spindle.rpcPool.handle("weatherline.phoneline", tap.wrap(weatherHandler((e) => spindle.rpcPool.read(e), ALLOWED_CALLERS)));
