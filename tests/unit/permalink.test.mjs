// The permalink round trip: a report deflated into a `#r=` fragment and read back by the
// page, whole when it fits, trimmed (no chunk times) when it does not, refused when corrupt.

import test from 'node:test';
import assert from 'node:assert/strict';
import { cliReport, wwwModule } from './support.mjs';

test('a report survives its permalink', async (t) => {
  const report = await cliReport(t);
  if (!report) return;
  const link = await wwwModule('common/permalink.ts');
  const { fragment, trimmed } = await link.encodeReport(report);
  assert.equal(trimmed, false);
  assert.ok(fragment.length <= link.MAX_FRAGMENT_CHARS);
  const back = await link.decodeFragment(`#${fragment}`);
  assert.deepEqual(back, { report, trimmed: false });
  assert.equal(await link.decodeFragment('#other=1'), undefined);
  await assert.rejects(link.decodeFragment('#r=AAAA'));
  // Too long for a link: the chunk times go, the figures stay.
  const big = structuredClone(report);
  for (const r of big.requests) r.chunk_times_ms = Array.from({ length: 20_000 }, (_, i) => i * 1.37);
  const cut = await link.encodeReport(big);
  assert.equal(cut.trimmed, true);
  const read = await link.decodeFragment(`#${cut.fragment}`);
  assert.equal(read.trimmed, true);
  assert.deepEqual(read.report.levels, big.levels);
  assert.ok(read.report.requests.every((r) => r.chunk_times_ms === null));
});
