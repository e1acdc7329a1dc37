// The package README's complete examples (every code block that imports the package, and
// the module script of the HTML example) type-check under `tsc --strict` with `checkJs`,
// against the installed package's own declarations, with `skipLibCheck: false` and lib
// ES2023 + DOM: what a TypeScript app copying them meets. Fragments (an option's value, a
// few lines of an earlier example) are not programs and are left out.
//
// Then they run, in Chromium, against the emulator: each program has an entry in RUNS (a
// program without one fails the test), which names the placeholders it replaces (the
// vendor's base URL or the app's own route → the emulator; `prompt()` for a key → a fixed
// string) and what the program must have done (its console output, a beacon, text shown).
// The HTML example is served as written, the package mapped where its import map says; the
// others are bundled with esbuild (their SDKs from tests/browser/node_modules), the package
// left to the page's import map, as an unbundled app would load it.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import test from 'node:test';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import os from 'node:os';
import { assertClean } from './support/browser.mjs';
import { asset } from './support/env.mjs';
import { fixture } from './support/fixture.mjs';
import { installPackage } from './support/pkg.mjs';
import { startReceiver } from './support/otlp.mjs';
import { freePort, startServer } from './support/servers.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');
const TSC = path.join(ROOT, 'pkg', 'node_modules', 'typescript', 'bin', 'tsc');
/** The packages the recipes import besides tpsmeter (tests/browser/package.json has them). */
const SDKS = ['openai', 'ai', '@ai-sdk/openai', '@opentelemetry/api', '@opentelemetry/sdk-metrics', '@opentelemetry/exporter-metrics-otlp-http'];

/**
 * The README's programs: [line, source, block] of each block that imports the package
 * (source: the module script of an HTML block; block: the whole block as written).
 */
export function programs(markdown) {
  const out = [];
  const re = /^ *```(\w+)\n([\s\S]*?)^ *```$/gm;
  for (const m of markdown.matchAll(re)) {
    const line = markdown.slice(0, m.index).split('\n').length;
    let code = m[2];
    if (m[1] === 'html') {
      const script = /<script type="module">\n([\s\S]*?)<\/script>/.exec(code);
      if (!script) continue;
      code = script[1];
    } else if (m[1] !== 'js' && m[1] !== 'ts') {
      continue;
    }
    if (/^\s*import .* from 'tpsmeter/m.test(code)) out.push([line, code, { lang: m[1], text: m[2] }]);
  }
  return out;
}

/** The package installed into a scratch project, or undefined (`t` skipped). */
function installedProject(t) {
  const pkg = installPackage(t);
  if (pkg && !pkg.project) t.skip('needs the packed package installed into a project (TPSMETER_PKG_TARBALL)');
  return pkg?.project ? pkg : undefined;
}

/**
 * `files` (name -> source), written to a fresh `dir`, type-check under tsc --strict with
 * `skipLibCheck: false` and lib ES2023 + DOM, as an app's build would check them.
 */
function assertTypeChecks(dir, files, what) {
  assert.ok(fs.existsSync(TSC), `TypeScript at ${TSC} (cargo xtask pkg installs it)`);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir);
  for (const [name, code] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), code);
  fs.writeFileSync(
    path.join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        allowJs: true,
        checkJs: true,
        strict: true,
        noEmit: true,
        skipLibCheck: false,
        target: 'ES2022',
        module: 'ESNext',
        moduleResolution: 'bundler',
        lib: ['ES2023', 'DOM', 'DOM.Iterable'],
        types: [],
      },
      files: Object.keys(files),
    }),
  );
  const r = spawnSync(process.execPath, [TSC, '-p', dir], { encoding: 'utf8' });
  assert.equal(r.status, 0, `tsc --strict over ${what}:\n${r.stdout}${r.stderr}`);
}

/** An app's code reading a report: compiles only if the report is typed. */
const TYPES_CHECK = `import type { Report, RequestRecord, StreamRecord, Warning, Environment, ErrorRecord, ErrorClass, PhaseSummary } from 'tpsmeter';
import type { MeterRecord } from 'tpsmeter/meter';
export function figures(report: Report): number[] {
  const summary = report.levels[0]!.summary;
  const p50: number | undefined = summary.ttft_ms?.p50;
  const typed: PhaseSummary = summary;
  const tps: number | null | undefined = summary.output_tps?.mean;
  // @ts-expect-error: no such field (the summary is not an open record)
  summary.ttft_ms?.p51;
  const record: RequestRecord = report.requests[0]!;
  const ttft: number | null | undefined = record.metrics.ttft_ms;
  const cls: ErrorClass | undefined = record.error?.class;
  const err: ErrorRecord | null | undefined = record.error;
  const w: Warning[] | undefined = report.warnings;
  const env: Environment = report.environment;
  const stream: StreamRecord = record;
  const m: MeterRecord = { ...stream, start_missing: true };
  return [typed.completed, p50 ?? 0, tps ?? 0, ttft ?? 0, cls ? 1 : 0, err ? 1 : 0, w?.length ?? 0, env.cpu_count ?? 0, m.output_tokens];
}
`;

test("the package README's examples type-check as written", (t) => {
  const pkg = installedProject(t);
  if (!pkg) return;
  const readme = fs.readFileSync(path.join(pkg.dir, 'README.md'), 'utf8');
  const found = programs(readme);
  assert.ok(found.length >= 5, `${found.length} examples found`);
  // The recipes' own dependencies (the SDKs), as the app would have them installed.
  for (const dep of SDKS) {
    const link = path.join(pkg.project, 'node_modules', dep);
    fs.mkdirSync(path.dirname(link), { recursive: true });
    if (!fs.existsSync(link)) fs.symlinkSync(path.join(HERE, 'node_modules', dep), link);
  }
  const files = Object.fromEntries(found.map(([line, code]) => [`readme-line-${line}.js`, code]));
  assertTypeChecks(path.join(pkg.project, 'readme-check'), files, "the README's examples");
});

test("the generated report types are the committed schema's, and a summary's figures are numbers", (t) => {
  const pkg = installedProject(t);
  if (!pkg) return;
  // Current: every type the schema names is declared by the package as built (a package
  // built before a schema change would miss the new ones).
  const schema = JSON.parse(fs.readFileSync(path.join(ROOT, 'crates/tpsmeter-core/report.schema.json'), 'utf8'));
  const dts = fs.readFileSync(path.join(pkg.dir, 'dist', 'generated', 'report.d.ts'), 'utf8');
  for (const name of ['Report', ...Object.keys(schema.$defs)]) {
    assert.match(dts, new RegExp(`export (interface|type) ${name}\\b`), `${name} is declared`);
  }
  for (const field of Object.keys(schema.$defs.PhaseSummary.properties)) {
    assert.match(dts, new RegExp(`\\b${field}\\??:`), `PhaseSummary.${field} is declared`);
  }
  // Typed, not `unknown` (TS2571) or `any`: the figures are numbers, a misspelt field fails.
  assertTypeChecks(path.join(pkg.project, 'types-check'), { 'check.ts': TYPES_CHECK }, "the report's types");
});

/** Pace of the emulator's streams where a program must act mid-stream: ttft, itl (ms), tokens. */
const SLOW = 'pace/5,40,16';

/** The emulator's route for `path` (with a pace prefix when given), as a JS string literal. */
const at = (ctx, path, pace) => JSON.stringify((pace ? ctx.emulator.prefixed(pace) : ctx.emulator.base) + path);

/** The SDK recipes' placeholders: the key the user types, the vendor's base URL. */
const sdkSubs = (ctx) => [
  ["prompt('API key') ?? ''", "'sk-test'"],
  ["'https://api.openai.com/v1'", at(ctx, '/v1')],
];

/** A recipe that logs its one stream's `otel`: wait for it, check it (see checkOtel). */
const oneOtel = {
  done: () => window.__logs.length >= 1,
  check: ({ logs, page }) => checkOtel(logs, page, 'openai'),
};

/**
 * How each README program runs here, found by a string only it contains. `subs`: the
 * placeholders it replaces ([from, to], each must be in the block); `done`: the page state to
 * wait for (a predicate run in the page over `window.__logs`, the console.log arguments);
 * `check`: what it must have done. `notRun`: why it does not run here.
 */
const RUNS = [
  {
    name: 'esbuild: setPackageBase',
    marker: "setPackageBase('/tpsmeter/')",
    subs: (ctx) => [["'http://127.0.0.1:8080'", at(ctx, '')]],
    done: () => window.__logs.length > 0,
    check({ logs }) {
      assert.deepEqual(logs, [['worker']], 'the reader Worker started from the base');
    },
  },
  {
    name: 'bench() from a page (HTML, as written)',
    marker: "const key = prompt('API key (optional)')",
    subs: (ctx) => [
      ["prompt('API key (optional)') || undefined", 'undefined'],
      ["'http://127.0.0.1:8080'", at(ctx, '')],
    ],
    done: () => window.__logs.some((a) => Array.isArray(a[0])),
    async check({ logs, page }) {
      const p50s = logs.find((a) => Array.isArray(a[0]))[0];
      assert.equal(p50s.length, 2, 'one TTFT p50 per level');
      for (const v of p50s) assert.ok(typeof v === 'number' && v > 0, `p50 ${v}`);
      const records = logs.filter((a) => typeof a[0] === 'number');
      assert.ok(records.length >= 40, `${records.length} records`);
      assert.deepEqual(records.filter((a) => a[2] !== null), [], 'no failed request');
      assert.ok((await page.textContent('#answer')).length > 0, 'the answer is shown');
    },
  },
  {
    name: 'Meter on an app stream',
    marker: 'meter.observe(answer)',
    subs: (ctx) => [["fetch('/v1/chat/completions'", `fetch(${at(ctx, '/v1/chat/completions')}`]],
    beacons: 1,
    async check({ page, logs, beacons }) {
      assert.equal(beacons[0].url, '/rum');
      await checkOtel([[beacons[0].body]], page, 'openai');
      assert.deepEqual(logs, []);
      assert.ok(!page.consoleLines.some((l) => l.includes('no report')), page.consoleLines.join('\n'));
    },
  },
  {
    name: 'recipe: send the figures to OpenTelemetry (OTLP exporter)',
    marker: "otlpExporter({ url: 'https://collector.example.com:4318/v1/metrics'",
    subs: (ctx) => [
      ["'https://collector.example.com:4318/v1/metrics'", JSON.stringify(ctx.collector.url)],
      // Its interval is 30 s by default: every second here.
      ["serviceName: 'my-app' }", "serviceName: 'my-app', intervalMs: 1000 }"],
      ["fetch('/v1/chat/completions'", `fetch(${at(ctx, '/v1/chat/completions')}`],
    ],
    async check({ ctx }) {
      // The report is built when the page is idle after the stream, and sent at the next
      // interval (otel.test.mjs covers the send as the page goes away).
      const got = await ctx.collector.waitFor('the export', (r) => r.received.length > 0, 30_000);
      assert.deepEqual(got.errors, []);
      const scope = got.received[0].request.resourceMetrics[0].scopeMetrics[0];
      assert.equal(scope.scope.name, 'tpsmeter');
      const names = got.received.flatMap((r) => r.request.resourceMetrics[0].scopeMetrics[0].metrics.map((m) => m.name));
      assert.ok(names.includes('gen_ai.client.operation.time_to_first_chunk'), names.join(','));
    },
  },
  {
    name: 'recipe: send the figures to OpenTelemetry (the SDK bridge)',
    marker: 'otelBridge(metrics.getMeter(',
    subs: (ctx) => [
      ["'https://collector.example.com:4318/v1/metrics'", JSON.stringify(ctx.collector.url)],
      // The SDK's reader exports every 60 s by default: every second here.
      ['new PeriodicExportingMetricReader({ exporter })', 'new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 1000 })'],
      ["fetch('/v1/chat/completions'", `fetch(${at(ctx, '/v1/chat/completions')}`],
    ],
    async check({ ctx }) {
      // The SDK's own export, of the report the bridge recorded: polled at the receiver.
      const has = (got) =>
        got.received.some((r) =>
          // The SDK's scope is the app's meter name ('my-app'): the exporter recipe's bodies,
          // in the same receiver, are the 'tpsmeter' scope's.
          r.request.resourceMetrics.some((rm) => rm.scopeMetrics.some((sm) => sm.scope?.name === 'my-app' && sm.metrics.some((m) => m.name === 'gen_ai.client.operation.time_to_first_chunk' && m.histogram.dataPoints.some((p) => Number(p.count) > 0)))),
        );
      const got = await ctx.collector.waitFor("the SDK's export", has, 30_000);
      assert.deepEqual(got.errors, []);
      assert.ok(has(got), JSON.stringify(got).slice(0, 400));
      const bounds = got.received
        .flatMap((r) => r.request.resourceMetrics[0].scopeMetrics.filter((sm) => sm.scope?.name === 'my-app').flatMap((sm) => sm.metrics))
        .find((m) => m.name === 'gen_ai.client.operation.time_to_first_chunk').histogram.dataPoints[0].explicitBounds;
      assert.equal(bounds.at(-1), 81.92, 'the advised buckets reached the SDK');
    },
  },
  {
    name: 'recipe: the openai SDK',
    marker: "import OpenAI from 'openai'",
    subs: sdkSubs,
    ...oneOtel,
  },
  {
    name: "recipe: the AI SDK's streamText",
    marker: "import { streamText } from 'ai'",
    subs: sdkSubs,
    ...oneOtel,
  },
  {
    name: "recipe: useChat's DefaultChatTransport",
    marker: 'new DefaultChatTransport',
    // The emulator's UI message stream route stands for the app's chat route.
    subs: (ctx) => [["api: '/api/chat'", `api: ${at(ctx, '/api/ui-chat')}`]],
    ...oneOtel,
  },
  {
    name: 'recipe: several streams at once',
    marker: 'Promise.all([ask(',
    subs: (ctx) => [["fetch('/v1/chat/completions'", `fetch(${at(ctx, '/v1/chat/completions', SLOW)}`]],
    done: () => window.__logs.length >= 3,
    check({ logs }) {
      const last = logs.find((a) => a.length === 3);
      assert.deepEqual(last, [16, 16, true], 'both streams whole, each with its own id');
      const ttfts = logs.filter((a) => a.length === 1).map((a) => a[0]);
      assert.equal(ttfts.length, 2, 'one report each');
      for (const v of ttfts) assert.ok(v > 0, `ttft ${v}`);
    },
  },
  {
    name: 'recipe: partial reports',
    marker: 'const sofar = await stream.report()',
    subs: (ctx) => [["fetch('/v1/chat/completions'", `fetch(${at(ctx, '/v1/chat/completions', SLOW)}`]],
    done: () => window.__logs.length >= 1,
    beacons: 1,
    check({ logs, beacons }) {
      const [partial, tokens, attribute, id] = logs[0];
      // The final report, beaconed, has the partial one's id.
      const final = beacons[0].body;
      assert.equal(final.partial, false);
      assert.equal(final.otel.attributes['tpsmeter.report.partial'], 'false');
      assert.ok(typeof id === 'string' && id.length > 0, `stream id ${id}`);
      assert.equal(final.stream_id, id);
      assert.equal(partial, true);
      assert.ok(tokens < 16, `a partial view: ${tokens} of 16 tokens`);
      assert.equal(attribute, 'true');
    },
  },
  {
    name: 'recipe: aborting',
    marker: 'stop.abort()',
    subs: (ctx) => [["fetch('/v1/chat/completions'", `fetch(${at(ctx, '/v1/chat/completions', SLOW)}`]],
    done: () => window.__logs.length >= 1,
    check({ logs }) {
      assert.deepEqual(logs[0], ['cancelled', 'cancelled']);
    },
  },
  {
    name: 'createEngine',
    marker: 'createEngine, listCachedModels',
    // Measured with the model served locally (SmolLM2-135M Q4_1, SwiftShader, 2 cores, load
    // average 5): this example 26 s, the next 207 s (5 requests of 128 tokens at ~7 tok/s).
    notRun: 'loads, probes and decodes 64 tokens on SwiftShader (26 s here); engine.test.mjs makes the same calls on SmolLM2',
  },
  {
    name: 'bench() of the local engine',
    marker: "api: 'local', engine",
    notRun: "640 tokens on SwiftShader (207 s here); engine.test.mjs runs bench({ api: 'local', engine }) on SmolLM2",
  },
];

/** A recipe's one `console.log(otel)`: a whole, successful stream of `provider`'s. */
async function checkOtel(logs, page, provider) {
  const [otel] = logs[0];
  assert.equal(otel.attributes['gen_ai.provider.name'], provider);
  assert.equal(otel.attributes['tpsmeter.report.partial'], 'false');
  assert.equal(otel.attributes['error.type'], undefined, JSON.stringify(otel.attributes));
  const ttft = otel.metrics.find((m) => m.name === 'gen_ai.client.operation.time_to_first_chunk');
  assert.ok(ttft?.values[0] > 0, JSON.stringify(otel.metrics));
  const usage = otel.metrics.find((m) => m.name === 'gen_ai.client.token.usage');
  assert.ok(usage?.values.some((v) => v > 0), JSON.stringify(usage));
  assert.ok((await page.textContent('p')).length > 0, 'the answer is shown');
}

/** A blank page (its `body` given). */
function blankPage(title, body = '') {
  return `<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>${title}</title></head><body>${body}</body></html>\n`;
}

/** Replaces each placeholder, which must be in `code`. */
function substitute(code, subs, where) {
  for (const [from, to] of subs) {
    assert.ok(code.includes(from), `${where}: placeholder ${from} not found (update RUNS with the README)`);
    code = code.split(from).join(to);
  }
  return code;
}

/**
 * What the page's programs hand out, kept as JSON (installed before its scripts run):
 * `window.__logs`, the console.log arguments; `window.__beacons`, each sendBeacon's URL and
 * parsed body (kept, not sent: there is no collector at `/rum` here).
 */
function capture() {
  const json = (v) => JSON.parse(JSON.stringify(v === undefined ? null : v));
  window.__logs = [];
  window.__beacons = [];
  const log = console.log.bind(console);
  console.log = (...args) => {
    window.__logs.push(args.map(json));
    log(...args);
  };
  navigator.sendBeacon = (url, data) => {
    window.__beacons.push({ url: String(url), body: typeof data === 'string' ? JSON.parse(data) : null });
    return true;
  };
}

test("the package README's examples run against the emulator", async (t) => {
  const pkg = installPackage(t);
  if (!pkg) return;
  const esbuildPath = path.join(ROOT, 'pkg', 'node_modules', 'esbuild');
  assert.ok(fs.existsSync(esbuildPath), `esbuild at ${esbuildPath} (cargo xtask pkg installs it)`);
  const esbuild = createRequire(path.join(ROOT, 'pkg', 'package.json'))('esbuild');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpsmeter-readme-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const fx = await fixture(t, {
    emulator: { ttftMs: 5, itlMs: 2, tokens: 64 },
    // The HTML example's import map points at /node_modules/tpsmeter/.
    mounts: { '/readme/': dir, '/node_modules/tpsmeter/': pkg.dir },
  });
  if (!fx) return;
  t.after(() => fx.close());

  fs.writeFileSync(path.join(dir, 'harness.html'), blankPage('README example'));
  const { exports } = JSON.parse(fs.readFileSync(path.join(pkg.dir, 'package.json'), 'utf8'));
  /** Bundles a program; its `tpsmeter` imports stay imports of the package served at `at`. */
  const bundle = async (code, sourcefile, at) => {
    const external = {
      name: 'tpsmeter-served',
      setup(build) {
        build.onResolve({ filter: /^tpsmeter(\/|$)/ }, (a) => {
          const entry = exports[`.${a.path.slice('tpsmeter'.length)}`];
          assert.ok(entry?.default, `${a.path} is an entry point of the package`);
          return { path: at + entry.default.replace(/^\.\//, ''), external: true };
        });
      },
    };
    const out = await esbuild.build({
      stdin: { contents: code, resolveDir: HERE, sourcefile },
      bundle: true,
      format: 'esm',
      platform: 'browser',
      target: 'es2022',
      write: false,
      logLevel: 'silent',
      plugins: [external],
    });
    return out.outputFiles[0].text;
  };

  const readme = fs.readFileSync(path.join(pkg.dir, 'README.md'), 'utf8');
  const found = programs(readme);
  // The OTLP recipe's Collector: a receiver that parses strictly and allows the page's origin.
  const ctx = { emulator: fx.emulator, collector: await startReceiver(t, fx.origin) };
  for (const [line, code, block] of found) {
    const runs = RUNS.filter((r) => block.text.includes(r.marker));
    assert.equal(runs.length, 1, `README line ${line}: ${runs.length} entries of RUNS match this program (it needs one)`);
    const [run] = runs;
    await t.test(`${run.name} (README line ${line})`, async (st) => {
      if (run.notRun) {
        st.skip(`not run here: ${run.notRun}`);
        return;
      }
      const where = `README line ${line}`;
      const subs = run.subs(ctx);
      const page = await fx.browser.newPage();
      await page.addInitScript(capture);
      if (block.lang === 'html') {
        fs.writeFileSync(path.join(dir, `line-${line}.html`), substitute(block.text, subs, where));
        await page.goto(`${fx.origin}/readme/line-${line}.html`);
      } else {
        const js = await bundle(substitute(code, subs, where), `README.md:${line}`, '/tpsmeter/');
        fs.writeFileSync(path.join(dir, `line-${line}.js`), js);
        await page.goto(`${fx.origin}/readme/harness.html`);
        // Resolves once the program's top-level await is done (rejects with its error).
        await page.evaluate((src) => import(src).then(() => undefined), `/readme/line-${line}.js`);
      }
      if (run.done) await page.waitForFunction(run.done, undefined, { timeout: 60_000 });
      // onReport's beacons come after the stream (the report is built when the page is idle).
      if (run.beacons) await page.waitForFunction((n) => window.__beacons.length >= n, run.beacons, { timeout: 30_000 });
      const { logs, beacons } = await page.evaluate(() => ({ logs: window.__logs, beacons: window.__beacons }));
      if (run.beacons) assert.equal(beacons.length, run.beacons, JSON.stringify(beacons));
      await run.check({ logs, beacons, page, ctx });
      await assertClean(page);
      await page.close();
    });
  }
  // The same-origin recipe: the Meter example as written (its request goes to the page's
  // own `/v1/chat/completions`), in a site served by `tpsmeter serve --www` beside the model.
  await t.test('recipe: same origin with `tpsmeter serve --www` (the Meter example, unchanged)', async (st) => {
    const cli = asset(st, 'TPSMETER_CLI_BIN');
    const model = cli && asset(st, 'TPSMETER_MODEL');
    if (!model) return;
    const [line, code] = found.find(([, , b]) => b.text.includes('meter.observe(answer)'));
    const www = path.join(dir, 'www');
    fs.mkdirSync(www);
    for (const sub of ['dist', 'wasm']) fs.cpSync(path.join(pkg.dir, sub), path.join(www, 'tpsmeter', sub), { recursive: true });
    // Bundled into a file: the site's CSP refuses inline scripts and inline import maps.
    fs.writeFileSync(path.join(www, 'main.js'), await bundle(code, `README.md:${line}`, '/tpsmeter/'));
    fs.writeFileSync(path.join(www, 'index.html'), blankPage('same origin', '<script type="module" src="/main.js"></script>'));
    const port = await freePort();
    const server = await startServer(cli, ['serve', '--model', model, '--www', www, '--port', String(port)], port, '/health');
    st.after(() => server.stop());
    const p = await fx.browser.newPage();
    await p.addInitScript(capture);
    await p.goto(`${server.base}/`);
    await p.waitForFunction(() => window.__beacons.length >= 1, undefined, { timeout: 120_000 });
    const { beacons, isolated } = await p.evaluate(() => ({ beacons: window.__beacons, isolated: crossOriginIsolated }));
    assert.equal(isolated, true, 'the page is cross-origin isolated (COOP/COEP from tpsmeter serve)');
    assert.equal(beacons.length, 1);
    await checkOtel([[beacons[0].body]], p, 'openai');
    assert.deepEqual(p.consoleLines.filter((l) => l.startsWith('error')), []);
    await assertClean(p);
    await p.close();
  });

  // Not vacuous: most of the README's programs ran.
  assert.ok(found.filter(([, , b]) => RUNS.some((r) => !r.notRun && b.text.includes(r.marker))).length >= 8);
});
