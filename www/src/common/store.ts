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

/** The keys of run `id`'s per-request records. */
function recordsOf(id: string): IDBKeyRange {
  return IDBKeyRange.bound([id, -Infinity], [id, Infinity]);
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
    await tx.objectStore('records').delete(recordsOf(run.id));
  }
  await tx.done;
}

export async function putRecord(run: string, record: RequestRecord): Promise<void> {
  await (await open()).put('records', { run, id: record.id, record });
}

export async function records(run: string): Promise<RequestRecord[]> {
  const rows = await (await open()).getAll('records', recordsOf(run));
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
  await tx.objectStore('records').delete(recordsOf(id));
  await tx.done;
}

/**
 * Runs left `running` by a page that is gone (reloaded, crashed, closed) become
 * `interrupted`; their finished records stay, and one with none is deleted. A run whose
 * lock another page still holds is that page's, running now: it is left alone, and looked
 * at again when the lock is released (that page's run ended, or a reload's old document let
 * go of it); `onChange` then runs, since the run is no longer `running` either way.
 * Resolves to the runs marked now.
 */
export async function markInterrupted(onChange: () => void): Promise<StoredRun[]> {
  const out: StoredRun[] = [];
  for (const run of await listRuns()) {
    if (run.status !== 'running' || mine.has(run.id)) continue;
    if (!('locks' in navigator)) {
      // Nothing says whether another tab runs it: `recover` at least never touches a run
      // that has ended, and that tab's last write stores the whole run again.
      const kept = await recover(run.id);
      if (kept) out.push(kept);
      continue;
    }
    const name = lockName(run.id);
    const now = await navigator.locks.request(name, { ifAvailable: true }, async (lock) => (lock ? recover(run.id) : 'held'));
    if (now === 'held') {
      // Held by a live page (or a reloaded page's old document, released shortly). That page
      // lets go only after its last write, so what `recover` reads then is final.
      void navigator.locks.request(name, async () => {
        await recover(run.id);
        onChange();
      });
    } else if (now) out.push(now);
  }
  return out;
}

/**
 * Marks run `id` interrupted, or deletes it when no request of it finished, if it is still
 * `running` without a report. Called with the run's lock held (or without Web Locks). The
 * run is read again here, and read and written in one transaction: the copy `listRuns` gave
 * may be stale, since the page that ran it may have stored its report (which drops the
 * per-request records) just before letting go of the lock, and deciding on that copy
 * deleted finished runs. Resolves to the run as marked, or undefined when it was left or
 * deleted.
 */
async function recover(id: string): Promise<StoredRun | undefined> {
  const tx = (await open()).transaction(['runs', 'records'], 'readwrite');
  const runs = tx.objectStore('runs');
  const run = await runs.get(id);
  let kept: StoredRun | undefined;
  if (run?.status === 'running' && !run.report) {
    if ((await tx.objectStore('records').count(recordsOf(id))) === 0) {
      await runs.delete(id);
    } else {
      run.status = 'interrupted';
      await runs.put(run);
      kept = run;
    }
  }
  await tx.done;
  return kept;
}

// Another tab of this site may be running a benchmark right now: a Web Lock held for the
// run's life says so, and such a run is left alone.
const mine = new Set<string>();

function lockName(id: string): string {
  return `tpsmeter-run-${id}`;
}

/**
 * Takes run `id`'s lock, so that other pages (and this one) see the run as running, not left
 * behind. Resolves once the lock is held (store the run as running only after that) to the
 * function that releases it: call it only after the run's last write has committed, since
 * the moment it is free another page may recover the run.
 */
export async function holdRunLock(id: string): Promise<() => void> {
  mine.add(id);
  if (!('locks' in navigator)) return () => void mine.delete(id);
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  await new Promise<void>((held) => {
    void navigator.locks.request(lockName(id), () => {
      held();
      return released;
    });
  });
  return () => {
    mine.delete(id);
    release();
  };
}
