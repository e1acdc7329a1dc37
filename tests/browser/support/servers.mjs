// Real inference servers on SmolLM2: llama.cpp's llama-server and `tpsmeter serve`.

import { spawn } from 'node:child_process';
import net from 'node:net';
import { stopChild } from './emulator.mjs';

/** A port free right now on 127.0.0.1. */
export async function freePort() {
  const srv = net.createServer();
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return port;
}

/**
 * Spawns `bin args`, then polls `readyPath` until it answers 200 (model loading can take a
 * while on a CPU-only machine). Resolves to { base, stop() }.
 */
export async function startServer(bin, args, port, readyPath, timeoutMs = 180_000) {
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const keep = (d) => {
    log = (log + d).slice(-4000);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${bin} exited (${child.exitCode}): ${log}`);
    try {
      const r = await fetch(base + readyPath);
      await r.arrayBuffer();
      if (r.ok) break;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) {
      await stopChild(child);
      throw new Error(`${bin} not ready after ${timeoutMs} ms: ${log}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return { base, stop: () => stopChild(child), log: () => log };
}
