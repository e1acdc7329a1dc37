// The OTLP exporter's memory with its endpoint down: ten minutes' worth of streams (6,000
// streams of 200 chunks over 20 models, a send every 30 s: 20 windows), then what it holds.
//
//   cargo xtask pkg && TPSMETER_PKG_DIR=$PWD/pkg node --expose-gc tests/browser/bench/otlp-down.mjs

const { otlpExporter } = await import(new URL('dist/otel/otlp.js', new URL((process.env.TPSMETER_PKG_DIR ?? 'pkg').replace(/\/?$/, '/'), 'file://' + process.cwd() + '/')).href);
const otlp = otlpExporter({ url: 'http://127.0.0.1:9/v1/metrics', serviceName: 'x', intervalMs: 3_600_000 });
await otlp.ready;
const rep = (i) => ({ partial: false, stream_id: 's' + i, record: {}, otel: { stream_id: 's' + i, attributes: { 'tpsmeter.report.partial': 'false', 'gen_ai.provider.name': 'openai', 'gen_ai.request.model': 'm' + (i % 20), 'gen_ai.operation.name': 'chat' },
  metrics: [ { name: 'gen_ai.client.operation.duration', values: [1 + (i % 9)], attributes: {} }, { name: 'gen_ai.client.operation.time_to_first_chunk', values: [0.1 * (i % 13)], attributes: {} },
    { name: 'gen_ai.client.operation.time_per_output_chunk', values: Array.from({ length: 200 }, (_, k) => 0.01 * ((i + k) % 17)), attributes: {} },
    { name: 'gen_ai.client.token.usage', values: [100], attributes: { 'gen_ai.token.type': 'input' } }, { name: 'gen_ai.client.token.usage', values: [200], attributes: { 'gen_ai.token.type': 'output' } } ] } });
global.gc?.();
const before = process.memoryUsage().heapUsed;
// 10 minutes at 10 streams a second (6,000 streams of 200 chunks), a send every 30 s: 20 windows.
for (let w = 0; w < 20; w++) { for (let i = 0; i < 300; i++) otlp.record(rep(w * 300 + i)); otlp.flush(); await new Promise((r) => setTimeout(r, 20)); }
global.gc?.();
const s = otlp.stats();
console.log(JSON.stringify(s), 'heap growth', ((process.memoryUsage().heapUsed - before) / 1e6).toFixed(2), 'MB');
otlp.shutdown();
