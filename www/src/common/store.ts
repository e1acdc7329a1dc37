// Run history in IndexedDB (through `idb`, a 1 KB promise wrapper kept by a Chrome engineer:
// raw IndexedDB's request/event API is where storage code usually goes wrong). Each finished
// request's record is written the moment it finishes, so a reload or a crash mid-run loses
// none; the report replaces them when the run completes. Keys are never stored here.

import { openDB, type DBSchema, type IDBPDatabase } from 'idb';
import type { Report, RequestRecord, RunSettings } from 'tpsmeter';

export type RunStatus = 'running' | 'done' | 'interrupted' | 'cancelled';

/** A CSV-imported request row (the columns of `toCsv`). */
export type CsvRow = Record<string, string>;

export interface StoredRun {
  id: string;
  createdAt: number;
  title: string;
  /** Where it came from: run here, imported from a file, opened from a permalink. */
  source: 'browser' | 'import' | 'permalink';
  status: RunStatus;
  /** The run's settings, without the key. */
  settings?: Omit<RunSettings, 'apiKey'> & { preset?: string };
  report?: Report;
  /** A CSV import carries rows, not a report. */
  rows?: CsvRow[];
  /** A permalink that dropped per-chunk arrays to fit in a URL. */
  trimmed?: boolean;
}

interface Schema extends DBSchema {
  runs: { key: string; value: StoredRun; indexes: { createdAt: number } };
  records: { key: [string, number]; value: { run: string; id: number; record: RequestRecord } };
}

let db: Promise<IDBPDatabase<Schema>> | undefined;

function open(): Promise<IDBPDatabase<Schema>> {
  db ??= openDB<Schema>('tpsmeter', 1, {
    upgrade(d) {
      const runs = d.createObjectStore('runs', { keyPath: 'id' });
      runs.createIndex('createdAt', 'createdAt');
      d.createObjectStore('records', { keyPath: ['run', 'id'] });
    },
  });
  return db;
}

export function newId(): string {
  return `${Date.now().toString(36)}-${crypto.getRandomValues(new Uint32Array(1))[0].toString(36)}`;
}

export async function putRun(run: StoredRun): Promise<void> {
  const d = await open();
  const tx = d.transaction(['runs', 'records'], 'readwrite');
  await tx.objectStore('runs').put(run);
  if (run.report) {
    // The report holds every record: drop the per-request copies.
    await tx.objectStore('records').delete(IDBKeyRange.bound([run.id, -Infinity], [run.id, Infinity]));
  }
  await tx.done;
}

export async function putRecord(run: string, record: RequestRecord): Promise<void> {
  await (await open()).put('records', { run, id: record.id, record });
}

export async function records(run: string): Promise<RequestRecord[]> {
  const rows = await (await open()).getAll('records', IDBKeyRange.bound([run, -Infinity], [run, Infinity]));
  return rows.map((r) => r.record).sort((a, b) => a.id - b.id);
}

export async function getRun(id: string): Promise<StoredRun | undefined> {
  return (await open()).get('runs', id);
}

/** Every run, newest first. */
export async function listRuns(): Promise<StoredRun[]> {
  return (await (await open()).getAllFromIndex('runs', 'createdAt')).reverse();
}

export async function deleteRun(id: string): Promise<void> {
  const d = await open();
  const tx = d.transaction(['runs', 'records'], 'readwrite');
  await tx.objectStore('runs').delete(id);
  await tx.objectStore('records').delete(IDBKeyRange.bound([id, -Infinity], [id, Infinity]));
  await tx.done;
}

/**
 * Runs left `running` by a page that is gone (reloaded, crashed, closed) become
 * `interrupted`; their finished records stay. Called once at page start, with the ids this
 * page is running itself (none yet at start).
 */
export async function markInterrupted(): Promise<StoredRun[]> {
  const out: StoredRun[] = [];
  for (const run of await listRuns()) {
    if (run.status === 'running' && !isMine(run.id) && !(await runningElsewhere(run.id))) {
      run.status = 'interrupted';
      await putRun(run);
      out.push(run);
    }
  }
  return out;
}

// Another tab of this site may be running a benchmark right now: a Web Lock held for the
// run's life says so, and such a run is left alone.
const mine = new Set<string>();
function isMine(id: string): boolean {
  return mine.has(id);
}

/** Holds a lock named after the run until `done` settles (other tabs see it running). */
export function holdRunLock(id: string, done: Promise<unknown>): void {
  mine.add(id);
  if ('locks' in navigator) {
    void navigator.locks.request(`tpsmeter-run-${id}`, () => done.catch(() => undefined));
  }
  void done.finally(() => mine.delete(id));
}

/** Whether some tab still holds the run's lock. */
export async function runningElsewhere(id: string): Promise<boolean> {
  if (!('locks' in navigator)) return false;
  const state = await navigator.locks.query();
  return (state.held ?? []).some((l) => l.name === `tpsmeter-run-${id}`);
}
