// Stand-in types for the wasm-bindgen glue (`../wasm/tpsmeter_wasm.js`), written from the
// contract in crates/tpsmeter-wasm/README.md. They apply only while the generated glue is
// absent: once `cargo xtask pkg` has written wasm/tpsmeter_wasm.d.ts, TypeScript resolves the
// import to that file and this pattern declaration is no longer consulted.

declare module '*/tpsmeter_wasm.js' {
  export type InitInput = RequestInfo | URL | Response | BufferSource | WebAssembly.Module;
  export default function init(
    input?: { module_or_path: InitInput | Promise<InitInput> } | InitInput,
  ): Promise<unknown>;

  export function version(): string;
  export function apis(): string[];
  export function reportSchema(): string;
  export function validateReport(report: object): void;

  export class BenchRun {
    constructor(options: object);
    request(): { method: string; url: string; headers: [string, string][]; body: string };
    next(nowMs: number): unknown;
    begin(ticket: number, startMs: number): Exchange;
    complete(ticket: number, exchange: Exchange, extras: object): unknown;
    cancel(nowMs: number): void;
    levelsDone(): number;
    report(environment: object, warnings: { code: string; message: string }[]): unknown;
    free(): void;
  }

  export class Exchange {
    constructor(api: string, startMs: number);
    response(tMs: number, status: number, retryAfter?: string | null): void;
    bytes(tMs: number, chunk: Uint8Array): string;
    readonly ended: boolean;
    end(tMs: number): void;
    errorBody(tMs: number, chunk: Uint8Array): void;
    fail(tMs: number, errorClass: string, message: string): void;
    paint(tMs: number, chars: number): void;
    record(): unknown;
    free(): void;
  }
}
