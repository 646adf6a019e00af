#!/usr/bin/env node
// npx switchboard-tap pair '<link>' [--state FILE] [--label TEXT] [--yes]
// Pairs this tap with the desktop of a pairing link: prints the verification code and asks the
// person whether the desktop shows the same one (the person on the desktop confirms there too).

import { createInterface } from "node:readline/promises";
import { pair } from "./pair.js";
import { loadState } from "./state.js";

const USAGE = `usage:
  switchboard-tap pair '<switchboard://pair?...>' [--state FILE] [--label TEXT] [--yes]
  switchboard-tap status [--state FILE]

  --state FILE  the tap's state file (identity, desktop, outbox); default ./switchboard-tap.json.
                It holds the tap's private key in the clear (a Lumiverse worker has no OS key
                store): keep it private (it is written 0600).
  --label TEXT  the name the desktop shows for this tap
  --yes         answer "yes" to "does the desktop show this code?" (scripts and tests only:
                without a terminal and without --yes, pairing is refused)`;

async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  let state = "switchboard-tap.json";
  let label: string | undefined;
  let yes = false;
  const positional: string[] = [];
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i]!;
    if (a === "--state") state = need(rest[++i], "--state");
    else if (a === "--label") label = need(rest[++i], "--label");
    else if (a === "--yes") yes = true;
    else if (a.startsWith("--")) throw new Error(`unknown option ${a}\n${USAGE}`);
    else positional.push(a);
  }
  if (cmd === "pair") {
    const link = positional[0];
    if (!link) throw new Error(`pair needs the pairing link the desktop shows\n${USAGE}`);
    if (!yes && !process.stdin.isTTY) throw new Error("no terminal to ask whether the codes match; run it in a terminal (or pass --yes in scripts)");
    const r = await pair(link, {
      stateFile: state,
      label,
      confirm: async (code) => {
        console.log(`Verification code: ${code}`);
        if (yes) {
          console.log(`Does the desktop show ${code}? yes (--yes)`);
          return true;
        }
        const rl = createInterface({ input: process.stdin, output: process.stdout });
        try {
          const a = await rl.question(`Does the desktop show ${code}? [y/N] `);
          return /^y(es)?$/i.test(a.trim());
        } finally {
          rl.close();
        }
      },
    });
    console.log(`Waiting for the desktop... paired as ${r.deviceId} with desktop ${r.desktopDeviceId}; kept in ${state}`);
    return 0;
  }
  if (cmd === "status") {
    const s = loadState(state);
    if (!s) console.log(`${state}: no tap state yet`);
    else console.log(`${state}: device ${s.device_id}, ${s.desktop ? `paired with ${s.desktop.device_id} at ${s.desktop.host}:${s.desktop.port}` : "not paired"}, ${s.outbox.length} waiting`);
    return 0;
  }
  console.log(USAGE);
  return cmd === undefined || cmd === "--help" || cmd === "help" ? 0 : 2;
}

function need(v: string | undefined, opt: string): string {
  if (v === undefined) throw new Error(`${opt} needs a value`);
  return v;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: Error) => {
    console.error(`switchboard-tap: ${e.message}`);
    process.exit(1);
  },
);
