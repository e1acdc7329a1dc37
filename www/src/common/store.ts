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

/**
 * Every run, newest first. Read from the store itself, not the `createdAt` index: a run
 * whose `createdAt` is not a valid key (stored by an older version, or by hand) is in no
 * index, yet must still be listed, and so deletable. Those come last.
 */
export async function listRuns(): Promise<StoredRun[]> {
  const runs = await (await open()).getAll('runs');
  const when = (r: StoredRun) => (typeof r.createdAt === 'number' && Number.isFinite(r.createdAt) ? r.createdAt : -Infinity);
  // As the index was read, reversed: newest first, then the greater id first.
  return runs.sort((a, b) => (when(a) === when(b) ? indexedDB.cmp(b.id, a.id) : when(b) > when(a) ? 1 : -1));
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
 * `interrupted`; their finished records stay, and one with none is deleted. A run whose
 * lock another page still holds is left alone now and marked when that lock is released
 * (that page ended, or a reload's old document let go of it); `onChange` then runs.
 * Resolves to the runs marked now.
 */
export async function markInterrupted(onChange: () => void): Promise<StoredRun[]> {
  const out: StoredRun[] = [];
  for (const run of await listRuns()) {
    if (run.status !== 'running' || mine.has(run.id)) continue;
    if (!('locks' in navigator)) {
      if (await interrupt(run)) out.push(run);
      continue;
    }
    const name = lockName(run.id);
    const free = await navigator.locks.request(name, { ifAvailable: true }, async (lock) => (lock ? interrupt(run) : 'held'));
    if (free === 'held') {
      // Held by a live page (or a reloaded page's old document, released shortly): mark the
      // run when the lock comes free, if it is still running then.
      void navigator.locks.request(name, async () => {
        const now = await getRun(run.id);
        if (now?.status === 'running' && (await interrupt(now)) !== undefined) onChange();
      });
    } else if (free) out.push(run);
  }
  return out;
}

/** Marks `run` interrupted (or deletes it when no request finished); whether it is kept. */
async function interrupt(run: StoredRun): Promise<boolean> {
  if ((await records(run.id)).length === 0) {
    await deleteRun(run.id);
    return false;
  }
  run.status = 'interrupted';
  await putRun(run);
  return true;
}

// Another tab of this site may be running a benchmark right now: a Web Lock held for the
// run's life says so, and such a run is left alone.
const mine = new Set<string>();

function lockName(id: string): string {
  return `tpsmeter-run-${id}`;
}

/**
 * Holds the run's lock until `done` settles, so other pages (and this one) see it running.
 * Resolves once the lock is held: store the run as running only after that.
 */
export function holdRunLock(id: string, done: Promise<unknown>): Promise<void> {
  mine.add(id);
  const release = () => mine.delete(id);
  void done.then(release, release);
  if (!('locks' in navigator)) return Promise.resolve();
  return new Promise<void>((held) => {
    void navigator.locks.request(lockName(id), () => {
      held();
      return done.then(
        () => undefined,
        () => undefined,
      );
    });
  });
}
