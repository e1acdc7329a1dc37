// The package ships the core's two JSON Schemas as files of their own
// (`tpsmeter/report.schema.json`, `tpsmeter/spec.schema.json`), byte for byte the committed
// ones its types are generated from, and its packed tarball holds them. They used to be
// compiled into the benchmark wasm, which every page running `bench()` downloads.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';

import { PKG, ROOT } from './support.mjs';

const SCHEMAS = [
  ['./report.schema.json', 'report.schema.json', 'Report'],
  ['./spec.schema.json', 'spec.schema.json', 'RunSettings'],
];

test('the schemas are exports of the package, equal to the committed ones', () => {
  const { exports, files } = JSON.parse(fs.readFileSync(path.join(PKG, 'package.json'), 'utf8'));
  for (const [key, name, title] of SCHEMAS) {
    const entry = exports[key]?.default;
    assert.ok(entry, `${key} is an export of the package`);
    assert.ok(
      files.some((f) => entry.replace(/^\.\//, '').startsWith(`${f}/`)),
      `${entry} is inside the package's files (${files.join(', ')})`,
    );
    const shipped = fs.readFileSync(path.join(PKG, entry), 'utf8');
    const committed = fs.readFileSync(path.join(ROOT, 'crates', 'tpsmeter-core', name), 'utf8');
    assert.equal(shipped, committed, `${entry} differs from crates/tpsmeter-core/${name}`);
    assert.equal(JSON.parse(shipped).title, title);
  }
  // Every option name, as the spec's table lists them, is in the spec schema.
  const spec = JSON.parse(fs.readFileSync(path.join(PKG, 'schema', 'spec.schema.json'), 'utf8'));
  for (const key of ['maxTokens', 'maxDurationS', 'findMax', 'onProgress', 'engine']) {
    assert.ok(spec.$defs.OptionKey.enum.includes(key), `${key} is an option name`);
  }
});

test('the packed tarball holds the schemas', (t) => {
  const tarball = process.env.TPSMETER_PKG_TARBALL;
  if (!tarball) {
    if (process.env.TPSMETER_REQUIRE_ASSETS === '1') assert.fail('TPSMETER_PKG_TARBALL is not set');
    t.skip('needs the packed package (TPSMETER_PKG_TARBALL; cargo xtask pkg prints its path)');
    return;
  }
  const listed = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).split('\n');
  for (const [, name] of SCHEMAS) {
    assert.ok(listed.includes(`package/schema/${name}`), `package/schema/${name} is in ${tarball}`);
  }
});
