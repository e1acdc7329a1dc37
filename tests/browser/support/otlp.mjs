// The OTLP test receiver (otlp_receiver.py beside this file), started for one test.

import { spawn } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));

/** The receiver's Python path: opentelemetry-proto installed by `cargo xtask setup`. */
function protoPath() {
  if (process.env.TPSMETER_OTLP_PROTO) return process.env.TPSMETER_OTLP_PROTO;
  const cache = process.env.TPSMETER_CACHE ?? path.join(process.env.HOME ?? '/tmp', '.cache', 'tpsmeter');
  return path.join(cache, 'otlp-proto');
}

/**
 * A receiver allowing `origin` (CORS), stopped after `t`: `{ url, received(), failNext(spec) }`.
 */
export async function startReceiver(t, origin = 'http://127.0.0.1:1') {
  const child = spawn('python3', [path.join(HERE, 'otlp_receiver.py'), '--origin', origin], {
    env: { ...process.env, PYTHONPATH: protoPath() },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.after(() => child.kill());
  const lines = readline.createInterface({ input: child.stdout });
  const port = await new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the OTLP receiver exited with ${code} (is opentelemetry-proto in ${protoPath()}?)`)));
    lines.once('line', (line) => resolve(Number(line.split(' ')[1])));
  });
  const base = `http://127.0.0.1:${port}`;
  const received = async () => (await fetch(`${base}/received`)).json();
  return {
    url: `${base}/v1/metrics`,
    received,
    /** What the receiver holds once `holds(it)` (polled; throws after `ms`). */
    waitFor: (what, holds, ms) => until(what, async () => {
      const r = await received();
      return holds(r) && r;
    }, ms),
    failNext: (spec) => fetch(`${base}/control`, { method: 'POST', body: JSON.stringify(spec) }),
  };
}


/** Polls `check` (no sleeps as sync: each poll is a real round trip) until it holds. */
export async function until(what, check, ms = 15_000) {
  const end = Date.now() + ms;
  for (;;) {
    const got = await check();
    if (got) return got;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setImmediate(r));
  }
}
