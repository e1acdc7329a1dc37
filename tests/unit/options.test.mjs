// The run spec's rules as `bench()`, `checkBenchOptions` and the benchmark page's form see
// them: each case of tests/fixtures/option-rules.json is refused by all three with the
// sentence the CLI says (crates/tpsmeter-cli/tests/option_rules.rs), each in its own names.

import test from 'node:test';
import assert from 'node:assert/strict';
import { fill, optionRules, pkg, wwwModule } from './support.mjs';

const BASE = { api: 'openai-chat', url: 'http://127.0.0.1:9', model: 'm' };
const key = (k) => `\`${k}\``;

test('bench() and checkBenchOptions refuse every rule case with the CLI sentence', async () => {
  const { bench, checkBenchOptions } = await pkg();
  const cases = optionRules();
  assert.ok(cases.length >= 15, 'the fixture holds the rules');
  for (const c of cases) {
    const want = fill(c.says, key);
    const options = { ...BASE, ...c.options };
    assert.equal(await checkBenchOptions(options), want, JSON.stringify(c.options));
    await assert.rejects(bench(options), (e) => {
      assert.equal(e.name, 'TypeError');
      assert.equal(e.message, `bench(): ${want}`);
      return true;
    });
  }
  // Each rule refuses only what it names: without its other half, the same options run.
  assert.equal(await checkBenchOptions({ ...BASE, concurrency: [2] }), undefined);
  assert.equal(await checkBenchOptions({ ...BASE, maxConcurrency: 4, rate: 2 }), undefined);
  assert.equal(await checkBenchOptions({ ...BASE, findMax: true, slo: 'ttft=1s' }), undefined);
});

test('names are checked by the spec: misspelt, snake_case and flag-style names find their option', async () => {
  const { bench, checkBenchOptions } = await pkg();
  for (const [typed, meant] of [
    ['max_tokens', 'maxTokens'],
    ['concurrncy', 'concurrency'],
    ['onProgres', 'onProgress'],
    ['ramp-up', 'rampUpS'],
  ]) {
    const message = await checkBenchOptions({ ...BASE, [typed]: 1 });
    assert.equal(message, `unknown option \`${typed}\` (did you mean \`${meant}\`?)`);
  }
  assert.equal(await checkBenchOptions({ ...BASE, colour: 'red' }), 'unknown option `colour`');
  assert.equal(await checkBenchOptions({ ...BASE, maxTokens: -5 }), '`maxTokens` expects a whole number from 0, got -5');
  assert.match(await checkBenchOptions({ ...BASE, api: 'openai' }), /^`api` expects one of 'openai-chat', .*'local', got "openai"$/);
  assert.equal(await checkBenchOptions({ url: 'http://h', model: 'm' }), '`api` is required');
  assert.equal(await checkBenchOptions({ api: 'anthropic', model: 'm' }), '`url` is required');
  // One number is one level.
  assert.equal(await checkBenchOptions({ ...BASE, concurrency: 3, rate: undefined }), undefined);
  // What only JavaScript can check stays the package's, in its words.
  await assert.rejects(bench({ ...BASE, onProgress: 5 }), /^TypeError: bench\(\): `onProgress` expects a function, got 5$/);
  await assert.rejects(bench({ ...BASE, dataset: 42 }), /`dataset` expects a File or Blob/);
  await assert.rejects(bench({ ...BASE, api: 'local' }), /needs `engine`/);
});

test("the page's form refuses the same option sets, in its labels", async () => {
  const { checkBenchOptions } = await pkg();
  const form = await wwwModule('bench/form.ts');
  const says = (start) => {
    const c = optionRules().find((r) => r.says.startsWith(start));
    assert.ok(c, start);
    return c.says;
  };
  const label = (k) => form.FORM_NAMES[k] ?? key(k);
  const base = { ...form.DEFAULTS, url: 'http://127.0.0.1:9', model: 'm' };
  const cases = [
    [{ findMax: true, slo: '' }, says('{findMax} needs {slo}')],
    [{ sharedPrefix: 4, uniquePrompts: false }, says('{sharedPrefix} needs {cacheBust}')],
    [{ promptKind: 'synthetic', inputLengths: '8', sharedPrefix: 8 }, says('{sharedPrefix} must be below {inputTokens}')],
    [{ promptKind: 'workload', workload: 'chat', turns: 65 }, says('{turns} must be between 1 and 64')],
  ];
  for (const [change, rule] of cases) {
    const state = { ...base, ...change };
    // The form's own checks (what must be filled in, its caps) do not repeat the spec's rules.
    assert.deepEqual(form.validate(state), [], JSON.stringify(change));
    const [settings] = form.settingsOf(state);
    assert.equal(await checkBenchOptions(settings, form.FORM_NAMES), fill(rule, label), JSON.stringify(change));
  }
  // Every label names an option the spec has.
  for (const k of Object.keys(form.FORM_NAMES)) {
    const message = await checkBenchOptions({ ...BASE, [k]: null });
    assert.doesNotMatch(message ?? '', /unknown option/, k);
  }
});
