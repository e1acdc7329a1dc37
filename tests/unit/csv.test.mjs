// The CSV round trip: a report's records written as `tpsmeter bench --csv` writes them (the
// core's writer, through wasm), read back by the page's import, and exported again as the
// same text.

import test from 'node:test';
import assert from 'node:assert/strict';
import { cliReport, pkg, wwwModule } from './support.mjs';

test('records → CSV → the page’s import → the same CSV', async (t) => {
  const report = await cliReport(t);
  if (!report) return;
  const { csvColumns, recordsToCsv } = await pkg();
  const files = await wwwModule('common/files.ts');
  const csv = await recordsToCsv(report.requests);
  const rows = files.parseCsv(csv);
  assert.equal(rows.length, report.requests.length);
  assert.deepEqual(Object.keys(rows[0]), await csvColumns());
  assert.deepEqual(rows.map((r) => r.id), report.requests.map((r) => String(r.id)));
  assert.deepEqual(rows.map((r) => Number(r.output_tokens)), report.requests.map((r) => r.output_tokens));
  assert.equal(await files.runCsv([], rows), csv);
  // Fields that need quoting survive: a comma, a quote and a line break in one cell.
  const awkward = rows.map((r, i) => (i === 0 ? { ...r, error_message: 'a, "b"\nc' } : r));
  const again = await files.runCsv([], awkward);
  assert.deepEqual(files.parseCsv(again), awkward);
  // A file that is not ours is named as such.
  assert.throws(() => files.parseCsv('a,b\n1,2\n'), /not a tpsmeter CSV: no id, ttft_ms, e2e_ms, output_tokens column/);
  assert.throws(() => files.parseCsv(`${csv}"unterminated`), /ends inside a quoted field/);
});
