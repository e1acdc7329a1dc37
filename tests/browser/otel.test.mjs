// tpsmeter/otel's OTLP exporter against a receiver that parses every body strictly as an
// ExportMetricsServiceRequest (PyPI's opentelemetry-proto, unknown fields refused) and
// answers CORS as a Collector does (support/otlp_receiver.py). Here in Node, on reports
// shaped as the meter's: what is sent, what is lost (nothing, with the endpoint up or
// answering 429), how far it grows with the endpoint down, and the body limit.

import assert from 'node:assert/strict';
import path from 'node:path';
import fs from 'node:fs';
import test from 'node:test';
import zlib from 'node:zlib';
import { fixture } from './support/fixture.mjs';
import { startReceiver, until } from './support/otlp.mjs';
import { installPackage } from './support/pkg.mjs';


/** A final report as the meter makes it, with its OTel view. */
function report(i, { model = 'gpt-4o-mini', partial = false, streamId = `s${i}` } = {}) {
  const ttft = 0.05 + (i % 20) * 0.07;
  const gaps = Array.from({ length: 5 }, (_, k) => 0.005 + ((i + k) % 7) * 0.011);
  return {
    partial,
    stream_id: streamId,
    record: {},
    otel: {
      stream_id: streamId,
      attributes: {
        'tpsmeter.report.partial': String(partial),
        'gen_ai.provider.name': 'openai',
        'gen_ai.request.model': model,
        'gen_ai.operation.name': 'chat',
      },
      metrics: [
        { name: 'gen_ai.client.operation.duration', unit: 's', values: [ttft + 0.5], attributes: {} },
        { name: 'gen_ai.client.operation.time_to_first_chunk', unit: 's', values: [ttft], attributes: {} },
        { name: 'gen_ai.client.operation.time_per_output_chunk', unit: 's', values: gaps, attributes: {} },
        { name: 'gen_ai.client.token.usage', unit: '{token}', values: [12 + i], attributes: { 'gen_ai.token.type': 'input' } },
        { name: 'gen_ai.client.token.usage', unit: '{token}', values: [40 + i], attributes: { 'gen_ai.token.type': 'output' } },
      ],
    },
  };
}

/** Every data point of `name` in the parsed requests. */
function points(received, name) {
  return received.flatMap((r) =>
    r.request.resourceMetrics.flatMap((rm) =>
      rm.scopeMetrics.flatMap((sm) => sm.metrics.filter((m) => m.name === name).flatMap((m) => (m.histogram ?? m.sum).dataPoints)),
    ),
  );
}

/** The bucket counts OTLP defines for `values` over `bounds` ((b[i-1], b[i]]), computed here. */
function expectBuckets(values, bounds) {
  const counts = new Array(bounds.length + 1).fill(0);
  for (const v of values) {
    const i = bounds.findIndex((b) => v <= b);
    counts[i === -1 ? bounds.length : i]++;
  }
  return counts;
}

async function loadOtel(t) {
  const pkg = installPackage(t);
  if (!pkg) return undefined;
  return import(path.join(pkg.dir, 'dist', 'otel', 'index.js'));
}

/** The package's otel entry, a receiver, and an exporter to it with `options`; or undefined. */
async function exporterTo(t, options = {}) {
  const otel = await loadOtel(t);
  if (!otel) return undefined;
  const receiver = await startReceiver(t);
  const exporter = otel.otlpExporter({ url: receiver.url, serviceName: 'otel-test', intervalMs: 3_600_000, ...options });
  t.after(() => exporter.shutdown());
  return { otel, receiver, exporter };
}

/** What the receiver holds once it has parsed a first body. */
const firstExport = (receiver) => receiver.waitFor('the export', (r) => r.received.length > 0);

test("tpsmeter/otlp, the exporter's eager part, imports nothing statically and is within 2 KB gzipped", (t) => {
  const pkg = installPackage(t);
  if (!pkg) return;
  const src = fs.readFileSync(path.join(pkg.dir, 'dist', 'otel', 'otlp.js'), 'utf8');
  assert.doesNotMatch(src, /^\s*(import|export)\s[^;]*\sfrom\s/m, 'a static import would make the exporter eager');
  assert.match(src, /import\(['"]\.\/exporter\.js['"]\)/);
  const gz = zlib.gzipSync(src, { level: 9 }).length;
  assert.ok(gz <= 2048, `${gz} bytes gzipped`);
});

test('every body parses strictly as OTLP, and the histograms hold every value with the advised buckets', async (t) => {
  const setup = await exporterTo(t);
  if (!setup) return;
  const { otel, receiver, exporter } = setup;
  const reports = Array.from({ length: 50 }, (_, i) => report(i, { model: i % 2 ? 'a' : 'b' }));
  for (const r of reports) exporter.record(r);
  exporter.flush();
  const got = await firstExport(receiver);
  assert.deepEqual(got.errors, []);
  const resource = got.received[0].request.resourceMetrics[0].resource.attributes;
  assert.deepEqual(resource.find((a) => a.key === 'service.name')?.value, { stringValue: 'otel-test' });

  const ttft = points(got.received, 'gen_ai.client.operation.time_to_first_chunk');
  assert.equal(ttft.length, 2, 'one series per model');
  const values = reports.map((r) => r.otel.metrics[1].values[0]);
  assert.equal(ttft.reduce((n, p) => n + Number(p.count), 0), 50);
  const bounds = ttft[0].explicitBounds;
  assert.deepEqual(bounds, [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92]);
  const summed = ttft.map((p) => p.bucketCounts.map(Number)).reduce((a, b) => a.map((x, i) => x + b[i]));
  assert.deepEqual(summed, expectBuckets(values, bounds));
  const sum = ttft.reduce((s, p) => s + p.sum, 0);
  assert.ok(Math.abs(sum - values.reduce((a, b) => a + b, 0)) < 1e-9);
  const chunk = points(got.received, 'gen_ai.client.operation.time_per_output_chunk');
  assert.equal(chunk.reduce((n, p) => n + Number(p.count), 0), 250);
  const usage = points(got.received, 'gen_ai.client.token.usage');
  assert.equal(usage.length, 4, 'input and output per model');
  assert.equal(usage[0].explicitBounds.at(-1), 67108864);
  for (const p of [...ttft, ...usage]) assert.equal(p.attributes.find((a) => a.key === 'gen_ai.request.model') !== undefined, true);
});

test('the renamed names: inference timings, token counters and per-call histograms by modality', async (t) => {
  const setup = await exporterTo(t, { naming: 'latest' });
  if (!setup) return;
  const { receiver, exporter } = setup;
  for (let i = 0; i < 10; i++) exporter.record(report(i));
  exporter.flush();
  const got = await firstExport(receiver);
  assert.deepEqual(got.errors, []);
  assert.equal(points(got.received, 'gen_ai.client.operation.duration').length, 0);
  assert.equal(points(got.received, 'gen_ai.client.inference.duration').reduce((n, p) => n + Number(p.count), 0), 10);
  const out = points(got.received, 'gen_ai.client.inference.usage.output_tokens');
  assert.equal(out.length, 1);
  assert.equal(Number(out[0].asInt), Array.from({ length: 10 }, (_, i) => 40 + i).reduce((a, b) => a + b));
  assert.ok(!out[0].attributes.some((a) => a.key === 'gen_ai.token.type'));
  assert.deepEqual(out[0].attributes.find((a) => a.key === 'gen_ai.token.modality')?.value, { stringValue: 'text' });
  const perCall = points(got.received, 'gen_ai.client.inference.operation.output_tokens');
  assert.equal(perCall.reduce((n, p) => n + Number(p.count), 0), 10);
});

test('429 is retried (Retry-After honoured) and nothing is lost', async (t) => {
  const setup = await exporterTo(t);
  if (!setup) return;
  const { receiver, exporter } = setup;
  await receiver.failNext({ status: 429, count: 2, retry_after: '0' });
  for (let i = 0; i < 20; i++) exporter.record(report(i));
  exporter.flush();
  const got = await firstExport(receiver);
  assert.equal(points(got.received, 'gen_ai.client.operation.duration').reduce((n, p) => n + Number(p.count), 0), 20);
  assert.equal(exporter.stats().retried, 2);
  assert.equal(exporter.stats().droppedBodies, 0);
});

test('a partial report is replaced by its final one, and recorded only if none came', async (t) => {
  const setup = await exporterTo(t);
  if (!setup) return;
  const { receiver, exporter } = setup;
  exporter.record(report(1, { partial: true, streamId: 'x' }));
  exporter.record(report(1, { streamId: 'x' }));
  exporter.record(report(2, { partial: true, streamId: 'y' }));
  exporter.shutdown();
  const got = await firstExport(receiver);
  const duration = points(got.received, 'gen_ai.client.operation.duration');
  const partialOf = (p) => p.attributes.find((a) => a.key === 'tpsmeter.report.partial')?.value.stringValue;
  assert.deepEqual(duration.map((p) => [partialOf(p), Number(p.count)]).sort(), [['false', 1], ['true', 1]]);
});

test('many series split into bodies within the keepalive budget, all parsed', async (t) => {
  const setup = await exporterTo(t);
  if (!setup) return;
  const { otel, receiver, exporter } = setup;
  // 100 models × 5 series each: 500, within the window's 512.
  for (let i = 0; i < 100; i++) exporter.record(report(i, { model: `model-${i}` }));
  exporter.flush();
  const got = await receiver.waitFor('every body', (r) => points(r.received, 'gen_ai.client.operation.duration').length === 100);
  assert.equal(exporter.stats().droppedValues, 0);
  assert.deepEqual(got.errors, []);
  assert.ok(got.received.length > 1, `one body of ${got.received[0]?.bytes} bytes`);
  for (const r of got.received) assert.ok(r.bytes <= otel.MAX_BODY, `${r.bytes} bytes`);
  // 103 models are 515 series: the last model's duration and time to first chunk are the
  // 511th and 512th; its 5 chunk gaps and 2 token counts are dropped and counted.
  for (let i = 0; i < 103; i++) exporter.record(report(i, { model: `model-${i}` }));
  exporter.flush();
  assert.equal(exporter.stats().droppedValues, 7);
});

test('with the endpoint down, the queue stays bounded and what it drops is counted', async (t) => {
  const otel = await loadOtel(t);
  if (!otel) return;
  // A port nothing listens on: every send fails at once, as a Collector that is down.
  const exporter = otel.otlpExporter({ url: 'http://127.0.0.1:9/v1/metrics', serviceName: 'otel-test', intervalMs: 3_600_000, maxQueued: 8 });
  t.after(() => exporter.shutdown());
  await exporter.ready;
  // Ten minutes of a busy page at a 30 s interval is 20 sends; 200 windows here.
  for (let w = 0; w < 200; w++) {
    for (let i = 0; i < 5; i++) exporter.record(report(w * 5 + i));
    exporter.flush();
    assert.ok(exporter.stats().queued <= 8, `queued ${exporter.stats().queued}`);
  }
  await until('the failures to be counted', async () => exporter.stats().droppedBodies >= 200 - 8);
  assert.ok(exporter.stats().queued <= 8);
  assert.ok(exporter.stats().queuedBytes <= 8 * otel.MAX_BODY, `${exporter.stats().queuedBytes} bytes queued`);
});

test('the bridge through the real OpenTelemetry SDK and its OTLP exporter gives the same histograms as ours', async (t) => {
  const setup = await exporterTo(t);
  if (!setup) return;
  const { otel, receiver, exporter } = setup;
  const { MeterProvider, PeriodicExportingMetricReader } = await import('@opentelemetry/sdk-metrics');
  const { OTLPMetricExporter, AggregationTemporalityPreference } = await import('@opentelemetry/exporter-metrics-otlp-http');
  const { resourceFromAttributes } = await import('@opentelemetry/resources');
  const sdkReceiver = await startReceiver(t);
  const provider = new MeterProvider({
    resource: resourceFromAttributes({ 'service.name': 'otel-test' }),
    readers: [
      new PeriodicExportingMetricReader({
        exporter: new OTLPMetricExporter({ url: sdkReceiver.url, temporalityPreference: AggregationTemporalityPreference.DELTA }),
        exportIntervalMillis: 3_600_000,
      }),
    ],
  });
  t.after(() => provider.shutdown());
  const bridge = otel.otelBridge(provider.getMeter('tpsmeter-test'));
  for (let i = 0; i < 30; i++) {
    const r = report(i, { model: i % 3 ? 'a' : 'b' });
    exporter.record(r);
    bridge(r);
  }
  exporter.flush();
  await provider.forceFlush();
  const [ours, sdk] = await Promise.all([firstExport(receiver), firstExport(sdkReceiver)]);
  assert.deepEqual([ours.errors, sdk.errors], [[], []]);
  const key = (p) =>
    p.attributes
      .map((a) => `${a.key}=${a.value.stringValue}`)
      .sort()
      .join(',');
  const shape = (p) => ({ count: p.count, bucketCounts: p.bucketCounts, explicitBounds: p.explicitBounds, min: p.min, max: p.max, sum: Number(p.sum.toFixed(9)) });
  for (const name of [
    'gen_ai.client.operation.duration',
    'gen_ai.client.operation.time_to_first_chunk',
    'gen_ai.client.operation.time_per_output_chunk',
    'gen_ai.client.token.usage',
  ]) {
    const byKey = (received) => Object.fromEntries(points(received, name).map((p) => [key(p), shape(p)]));
    const mine = byKey(ours.received);
    assert.ok(Object.keys(mine).length >= 2, name);
    assert.deepEqual(byKey(sdk.received), mine, name);
  }
});

test('in Chromium: a page that goes away still delivers the streams that had finished, and sends no key or text', async (t) => {
  // Streams of ~2 s (100 tokens, 20 ms apart) from the emulator, metered by the real meter.
  const fx = await fixture(t, { emulator: { ttftMs: 5, itlMs: 20, tokens: 100 } });
  if (!fx) return;
  t.after(() => fx.close());
  const receiver = await startReceiver(t, fx.origin);
  const page = await fx.page();
  const secret = 'sk-live-do-not-send-0123456789';
  const prompt = 'a prompt that must never reach the collector';
  await page.evaluate(
    async ([api, collector, secret, prompt]) => {
      const { Meter } = await import('/tpsmeter/dist/meter/index.js');
      const { otlpExporter } = await import('/tpsmeter/dist/otel/otlp.js');
      const otlp = otlpExporter({ url: collector, serviceName: 'page-test', intervalMs: 3_600_000 });
      let reported = 0;
      let twoReported;
      const two = new Promise((resolve) => (twoReported = resolve));
      const meter = new Meter({
        api: 'openai-chat',
        model: 'emulator',
        onReport: (report) => {
          otlp.record(report);
          if (!report.partial && ++reported === 2) twoReported();
        },
      });
      const init = {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
        body: JSON.stringify({ model: 'emulator', stream: true, messages: [{ role: 'user', content: prompt }] }),
      };
      const run = async () => {
        const stream = meter.start();
        const res = stream.wrap(await fetch(`${api}/v1/chat/completions`, init));
        const reader = res.body.getReader();
        while (!(await reader.read()).done);
      };
      await Promise.all([run(), run()]);
      await two;
      // A third stream, cut by the page going away after its first chunk.
      const stream = meter.start();
      const res = stream.wrap(await fetch(`${api}/v1/chat/completions`, init));
      await res.body.getReader().read();
    },
    [fx.emulator.base, receiver.url, secret, prompt],
  );
  // Away, as a click on a link or a closed tab: pagehide sends with keepalive, nothing else does.
  await page.goto('about:blank');
  const got = await receiver.waitFor('the keepalive export', (r) => {
    const finals = points(r.received, 'gen_ai.client.operation.duration').filter(
      (p) => p.attributes.find((a) => a.key === 'tpsmeter.report.partial')?.value.stringValue === 'false',
    );
    return finals.reduce((n, p) => n + Number(p.count), 0) === 2;
  });
  assert.deepEqual(got.errors, []);
  assert.ok(got.preflights >= 1, 'OTLP/JSON preflights, and the receiver allowed the page');
  const sent = JSON.stringify(got.received);
  assert.ok(!sent.includes(secret) && !sent.includes('must never reach'), 'no key or text in what was sent');
  const resource = got.received[0].request.resourceMetrics[0].resource.attributes.map((a) => a.key);
  assert.ok(resource.includes('service.name') && resource.includes('browser.language'), resource.join(','));
});
