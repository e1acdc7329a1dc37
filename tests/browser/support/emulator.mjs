// The tpsmeter-emulator binary as a child process on a free port. Per-request behaviour is
// chosen by URL path prefixes (`/fault/<spec>`, `/pace/<ttft>,<itl>,<tokens>[,<per chunk>]`,
// `/no-cors`) before the API path, so one emulator serves a whole test file.

import { spawn } from 'node:child_process';
import readline from 'node:readline';

/** How long the emulator may take to print its address. */
const START_TIMEOUT_MS = 20_000;

/**
 * Starts the emulator. `opts`: ttftMs, itlMs, tokens, tokensPerChunk, fault (its CLI flags).
 * Resolves to { base: 'http://127.0.0.1:PORT', stop() }.
 */
export async function startEmulator(bin, opts = {}) {
  const args = ['--port', '0'];
  const flag = { ttftMs: '--ttft-ms', itlMs: '--itl-ms', tokens: '--tokens', tokensPerChunk: '--tokens-per-chunk', fault: '--fault' };
  for (const [k, v] of Object.entries(opts)) if (v !== undefined) args.push(flag[k], String(v));
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => {
    stderr = (stderr + d).slice(-4000);
  });
  const lines = readline.createInterface({ input: child.stdout });
  const base = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`emulator did not start: ${stderr}`)), START_TIMEOUT_MS);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`emulator exited (${code}): ${stderr}`));
    });
    lines.on('line', (line) => {
      const m = /listening: (https?:\/\/[^/\s]+)/.exec(line);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
  });
  lines.on('line', () => {});
  return {
    base,
    /** Base URL with a per-request prefix, e.g. prefixed('fault/cut:3'). */
    prefixed: (prefix) => `${base}/${prefix.replace(/^\/+|\/+$/g, '')}`,
    stop: () => stopChild(child),
  };
}

/** SIGINT (servers print their stats and exit), SIGKILL after a grace period. */
export function stopChild(child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), 3000);
    child.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill('SIGINT');
  });
}
