// The same emulator run measured by the CLI (`tpsmeter bench --json`) and by the browser
// (`bench()`): both reports validate against the one JSON Schema
// (crates/tpsmeter-core/report.schema.json, checked here with Ajv, an independent validator)
// and agree on what was measured: levels, token counts and error classes.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import Ajv2020 from 'ajv/dist/2020.js';
import { assertClean } from './support/browser.mjs';
import { asset } from './support/env.mjs';
import { benchInPage, fixture } from './support/fixture.mjs';

const run = promisify(execFile);
const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const SCHEMA = JSON.parse(
  fs.readFileSync(path.join(ROOT, 'crates/tpsmeter-core/report.schema.json'), 'utf8'),
);

/** Each case: the emulator prefix, the API, and what both clients must see. */
const CASES = [
  { name: 'clean stream', prefix: 'pace/5,2,16', api: 'openai-chat' },
  { name: 'error event after 3 tokens', prefix: 'fault/error-event:3', api: 'anthropic' },
  // Tokens 100 ms apart: on a network error Chromium drops the bytes the page has not read
  // yet (DataPipeBytesConsumer::SignalError clears its pipe), so with the suite's 2 ms the
  // browser could lose the 4th token on a loaded machine while the CLI keeps it.
  { name: 'cut after 4 tokens', prefix: 'fault/cut:4/pace/5,100,16', api: 'gemini' },
  { name: 'HTTP 503', prefix: 'fault/status:503', api: 'ollama-chat' },
];

const OPTIONS = { model: 'emulator', concurrency: [1, 2], requests: 4, maxTokens: 12, prompt: 'Count.' };

/** What must agree between two reports of the same run. */
function essence(report) {
  return {
    levels: report.levels.map((l) => ({
      level: l.level,
      completed: l.summary.completed,
      succeeded: l.summary.succeeded,
      failed: l.summary.failed,
      output_tokens: l.summary.output_tokens,
      errors: l.summary.errors,
    })),
    records: report.requests
      .map((r) => `${JSON.stringify(r.level)} ${r.output_tokens} ${r.error?.class ?? 'ok'}`)
      .sort(),
  };
}

async function cliReport(cli, api, url, dir) {
  const file = path.join(dir, `${api}.json`);
  const args = [
    'bench', '--api', api, '--url', url, '--model', OPTIONS.model,
    '--concurrency', OPTIONS.concurrency.join(','), '--requests', String(OPTIONS.requests),
    '--max-tokens', String(OPTIONS.maxTokens), '--prompt', OPTIONS.prompt,
    '--json', file, '--quiet',
  ];
  // Exit status 3 means a level had no successful request, which the fault cases expect.
  await run(cli, args).catch((e) => {
    if (e.code !== 3) throw e;
  });
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

test('the CLI and the browser write the same report for the same run', async (t) => {
  const cli = asset(t, 'TPSMETER_CLI_BIN');
  if (!cli) return;
  const fx = await fixture(t, { emulator: { ttftMs: 5, itlMs: 2, tokens: 64 } });
  if (!fx) return;
  t.after(() => fx.close());
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpsmeter-schema-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const validate = new Ajv2020({ allErrors: true, strict: false, validateFormats: false }).compile(SCHEMA);
  const page = await fx.page();

  for (const c of CASES) {
    await t.test(c.name, async () => {
      const url = fx.emulator.prefixed(c.prefix);
      const native = await cliReport(cli, c.api, url, dir);
      const browser = await benchInPage(page, { ...OPTIONS, api: c.api, url });
      for (const [who, report] of [['CLI', native], ['browser', browser]]) {
        assert.ok(validate(report), `${who} report against the schema: ${JSON.stringify(validate.errors)}`);
        assert.equal(report.schema_version, 2);
      }
      assert.notEqual(native.environment.os, 'browser');
      assert.equal(browser.environment.os, 'browser');
      assert.deepEqual(essence(browser), essence(native));
      // Not vacuous: every case measured something, and the fault cases failed as planned.
      assert.equal(native.requests.length, 8);
      if (c.prefix.startsWith('fault/')) assert.ok(native.levels.every((l) => l.summary.failed === 4));
      else assert.ok(native.levels.every((l) => l.summary.output_tokens === 4 * 12));
    });
  }
  await assertClean(page);
});

test('a report that breaks the schema is caught by the validator', () => {
  const validate = new Ajv2020({ strict: false, validateFormats: false }).compile(SCHEMA);
  const broken = { schema_version: 2, tool: { name: 'x' } };
  assert.equal(validate(broken), false, 'missing fields must fail validation');
});
