// Export and import: the report as JSON (exactly what `tpsmeter bench --json` writes, so
// either tool's file opens in the other's viewer) and the requests as CSV (exactly what
// `tpsmeter bench --csv` writes: the core's writer, through wasm). Imports are held to the
// caps of `limits.ts` (size, nesting, string lengths, counts) and validated: JSON against
// the report's JSON Schema (the wasm core's `validateReport`), CSV against the column list;
// all of it before anything is stored.

import { csvColumns, csvOfRows, recordsToCsv, validateReport, type Report, type RequestRecord } from 'tpsmeter';
import { checkCounts, checkSize, count, JsonGuard, LIMITS, LimitError, sizeText } from './limits';
import type { CsvRow } from './store';

/** A load level as the report writes it: `{ concurrency: n }` or `{ rate: per second }`. */
export interface LevelSpec {
  concurrency?: number;
  rate?: number;
}

export function levelLabel(level: unknown): string {
  if (level && typeof level === 'object') {
    const l = level as LevelSpec;
    if (typeof l.concurrency === 'number') return `c=${l.concurrency}`;
    if (typeof l.rate === 'number') return `${l.rate}/s`;
  }
  return typeof level === 'string' || typeof level === 'number' ? String(level) : '';
}

export function paintOf(r: RequestRecord): { painted_tps?: number | null; ttfp_ms?: number | null; lag_ms?: number[]; tokens_per_frame?: number[]; empty_frames?: number } | undefined {
  return (r.metrics?.paint ?? undefined) as ReturnType<typeof paintOf>;
}

/** The load level of a CSV row: `level_kind` and `level` (an older export: `level` alone). */
export function rowLevel(r: CsvRow): string {
  const value = Number(r.level);
  if (r.level_kind && Number.isFinite(value)) return levelLabel({ [r.level_kind]: value });
  return r.level ?? '';
}

/** The CSV of what a run has: its records (the core's CSV), or the rows a CSV import gave. */
export async function runCsv(records: readonly RequestRecord[], rows?: CsvRow[]): Promise<string> {
  if (!rows) return recordsToCsv(records);
  // Written back with the header it came with, so an import exports the same text.
  const header = rows[0] ? Object.keys(rows[0]) : await csvColumns();
  return csvOfRows(header, rows.map((r) => header.map((h) => r[h] ?? '')));
}

/** RFC 4180 CSV → rows keyed by the header line; throws on a malformed file. */
export function parseCsv(text: string): CsvRow[] {
  const table: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  let i = 0;
  const tooLong = () => new LimitError(`a CSV field is longer than ${sizeText(LIMITS.stringBytes)}: over the cap for one text`);
  const endField = () => {
    row.push(field);
    field = '';
    if (row.length > LIMITS.csvColumns) throw new LimitError(`a CSV line has more than ${LIMITS.csvColumns} fields: over the cap`);
  };
  const endRow = () => {
    table.push(row);
    row = [];
    // The header line is not a request.
    if (table.length > LIMITS.requests + 1) throw new LimitError(`the CSV has more than ${count(LIMITS.requests)} rows: over the cap`);
  };
  while (i < text.length) {
    const c = text[i];
    // Checked as the field grows: a field of 60 MB stops at the cap.
    if (field.length > LIMITS.stringBytes) throw tooLong();
    if (quoted) {
      if (c === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i += 2;
          continue;
        }
        quoted = false;
      } else field += c;
      i++;
      continue;
    }
    if (c === '"' && field === '') quoted = true;
    else if (c === ',') endField();
    else if (c === '\n' || c === '\r') {
      endField();
      endRow();
      if (c === '\r' && text[i + 1] === '\n') i++;
    } else field += c;
    i++;
  }
  if (quoted) throw new Error('the CSV ends inside a quoted field');
  if (field !== '' || row.length > 0) {
    endField();
    endRow();
  }
  const [header, ...body] = table.filter((r) => !(r.length === 1 && r[0] === ''));
  if (!header) throw new Error('the CSV is empty');
  const missing = ['id', 'ttft_ms', 'e2e_ms', 'output_tokens'].filter((c) => !header.includes(c));
  if (missing.length) throw new Error(`not a tpsmeter CSV: no ${missing.join(', ')} column`);
  return body.map((cells, n) => {
    if (cells.length !== header.length) throw new Error(`CSV line ${n + 2} has ${cells.length} fields, the header ${header.length}`);
    return Object.fromEntries(header.map((h, j) => [h, cells[j]]));
  });
}

/** What a file import gives: a report (JSON) or request rows (CSV). */
export type Imported = { kind: 'report'; report: Report; name: string } | { kind: 'rows'; rows: CsvRow[]; name: string };

/**
 * Reads `file` within the caps of `LIMITS`: its size before any byte is read, and a JSON
 * file's nesting and string lengths as its bytes arrive (a file of nested brackets stops at
 * its first bytes, before the whole file is read or parsed). Throws naming the cap.
 */
export async function importFile(file: File): Promise<Imported> {
  checkSize(file.name, file.size);
  const bytes = new Uint8Array(file.size);
  let n = 0;
  let guard: JsonGuard | undefined;
  let csv = file.name.toLowerCase().endsWith('.csv');
  const reader = file.stream().getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (n + value.length > bytes.length) throw new Error(`${file.name} changed while it was read`);
      bytes.set(value, n);
      n += value.length;
      if (!csv && !guard) {
        // A CSV export starts with its header (`id,...`); anything else is read as JSON.
        csv = /^\s*id,/.test(new TextDecoder().decode(bytes.subarray(0, Math.min(n, 64))));
        if (!csv) {
          guard = new JsonGuard(file.name);
          guard.feed(bytes.subarray(0, n));
          continue;
        }
      }
      guard?.feed(value);
    }
  } catch (e) {
    await reader.cancel().catch(() => undefined);
    throw e;
  }
  if (csv) {
    const rows = parseCsv(new TextDecoder().decode(bytes.subarray(0, n)));
    return { kind: 'rows', rows, name: file.name };
  }
  return { kind: 'report', report: await parseReport(file.name, bytes.subarray(0, n), true), name: file.name };
}

/**
 * A report from JSON bytes (a file, a permalink): the scan of `JsonGuard` (unless `scanned`
 * says it ran as they arrived), the parser, the counts of `checkCounts`, then the schema
 * (`validateReport`). Throws naming what does not fit.
 */
export async function parseReport(what: string, bytes: Uint8Array, scanned = false): Promise<Report> {
  checkSize(what, bytes.length);
  if (!scanned) new JsonGuard(what).feed(bytes);
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder().decode(bytes));
  } catch (e) {
    throw new Error(`${what} is not JSON: ${e instanceof Error ? e.message : e}`);
  }
  checkCounts(what, json);
  await validateReport(json as object);
  return json as Report;
}

/** Starts a download of `text` as `name`. */
export function download(name: string, text: string, type: string): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
