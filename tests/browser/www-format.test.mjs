// The site's one set of number formats (www/src/common/format.ts), shared by the benchmark
// page and the demo since their two copies merged. Plain functions: no browser needed; the
// module is transpiled with the site's own TypeScript.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import test from 'node:test';

const www = new URL('../../www/', import.meta.url);

async function formatModule(t) {
  let ts;
  try {
    ts = createRequire(new URL('package.json', www))('typescript');
  } catch {
    t.skip('www/node_modules has no typescript; run `cargo xtask www` first');
    return undefined;
  }
  const src = fs.readFileSync(new URL('src/common/format.ts', www), 'utf8');
  const js = ts.transpileModule(src, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText;
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'tpsmeter-format-')), 'format.mjs');
  fs.writeFileSync(file, js);
  t.after(() => fs.rmSync(path.dirname(file), { recursive: true, force: true }));
  return import(file);
}

test('one definition of each format: figures for prose, bare figures for metric spans', async (t) => {
  const f = await formatModule(t);
  if (!f) return;
  // Prose and tables: 3 significant digits, grouping, a unit.
  assert.equal(f.ms(1234.5), '1,235 ms');
  assert.equal(f.num(12.345, 'tok/s'), '12.3 tok/s');
  // Metric spans (the demo): no grouping, so a reader's figure is what parseFloat reads.
  assert.equal(f.msFigure(1234.5), '1235');
  assert.equal(f.msFigure(12.34), '12.3');
  assert.equal(f.fixed(3.14159, 2), '3.14');
  assert.equal(f.mb(1_500_000), '1.5');
  assert.equal(f.mb(2_500_000_000, 0), '2500');
  // One "no value" mark for both.
  for (const none of [f.num(undefined), f.ms(null), f.fixed(NaN, 1), f.msFigure(undefined), f.mb(undefined), f.duration(Infinity)]) {
    assert.equal(none, f.NONE);
  }
});

test('a duration is rounded before it is split into minutes and seconds', async (t) => {
  const f = await formatModule(t);
  if (!f) return;
  assert.equal(f.duration(42), '42 s');
  assert.equal(f.duration(4.25), '4.25 s');
  assert.equal(f.duration(125), '2 min 5 s');
  assert.equal(f.duration(180), '3 min');
  // 119.6 s used to read "1 min 60 s".
  assert.equal(f.duration(119.6), '2 min');
});
