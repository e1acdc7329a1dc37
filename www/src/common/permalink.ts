// Permalinks: a run's report in the URL fragment (`#r=`), deflated and base64url-encoded.
// The fragment never reaches a server, and the report never holds a key (the package keeps
// keys out of reports, and redacts credentials in URLs). Reports too long for a comfortable URL drop their per-chunk arrays (the summaries,
// per-request metrics and errors stay) and say so.

import type { Report } from 'tpsmeter';
import { parseReport } from './files';
import { LIMITS, sizeText } from './limits';

/** Links longer than this drop per-chunk detail (browsers accept ~2 MB; chat apps do not). */
export const MAX_FRAGMENT_CHARS = 60_000;

async function deflate(text: string): Promise<Uint8Array> {
  const stream = new Blob([text]).stream().pipeThrough(new CompressionStream('deflate-raw'));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** Inflates at most `LIMITS.bytes`: a hostile link cannot make the page hold more. */
async function inflate(bytes: Uint8Array): Promise<Uint8Array> {
  const reader = new Blob([bytes as BlobPart]).stream().pipeThrough(new DecompressionStream('deflate-raw')).getReader();
  const parts: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > LIMITS.bytes) {
      await reader.cancel();
      throw new Error(`the permalink inflates past ${sizeText(LIMITS.bytes)}, the cap for a report`);
    }
    parts.push(value);
  }
  return new Uint8Array(await new Blob(parts as BlobPart[]).arrayBuffer());
}

function toBase64Url(bytes: Uint8Array): string {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function fromBase64Url(s: string): Uint8Array {
  const b = atob(s.replace(/-/g, '+').replace(/_/g, '/'));
  const out = new Uint8Array(b.length);
  for (let i = 0; i < b.length; i++) out[i] = b.charCodeAt(i);
  return out;
}

/** A copy of the report without per-chunk arrays. */
export function trimReport(report: Report): Report {
  const copy = structuredClone(report);
  for (const r of copy.requests) {
    r.chunk_times_ms = null;
    if (r.metrics) {
      r.metrics.itl_chunk_ms = [];
      const paint = r.metrics.paint as { lag_ms?: number[]; tokens_per_frame?: number[] } | null | undefined;
      if (paint) {
        paint.lag_ms = [];
        paint.tokens_per_frame = [];
      }
    }
  }
  return copy;
}

/** The fragment (`r=...`) for `report`, trimmed when the full one is too long. */
export async function encodeReport(report: Report): Promise<{ fragment: string; trimmed: boolean }> {
  let fragment = 'r=' + toBase64Url(await deflate(JSON.stringify(report)));
  let trimmed = false;
  if (fragment.length > MAX_FRAGMENT_CHARS) {
    fragment = 'r=' + toBase64Url(await deflate(JSON.stringify(trimReport(report))));
    trimmed = true;
  }
  return { fragment, trimmed };
}

/**
 * The report in a `#r=...` fragment, or undefined when there is none; throws on a corrupt
 * one, or one over the caps of an imported report (`parseReport`), naming what is wrong.
 */
export async function decodeFragment(hash: string): Promise<{ report: Report; trimmed: boolean } | undefined> {
  const params = new URLSearchParams(hash.replace(/^#/, ''));
  const r = params.get('r');
  if (!r) return undefined;
  // Caps: a fragment is at most a few MB; the report it inflates to, as an imported one.
  if (r.length > 4_000_000) throw new Error('the permalink is too long');
  const report = await parseReport('the permalink', await inflate(fromBase64Url(r)));
  const trimmed = report.requests.some((q) => q.chunk_times_ms === null && q.output_tokens > 0);
  return { report, trimmed };
}
