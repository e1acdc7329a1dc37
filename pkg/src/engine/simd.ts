// Whether this browser validates WebAssembly SIMD, which the CPU backend's kernels need (every
// current browser does: Chrome 91, Firefox 89, Safari 16.4). Shared by the engine's Worker and
// pages that ask before loading anything (the demo).

/** A module of one function returning `v128.const 0`. */
const SIMD_PROBE = new Uint8Array([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 22, 1, 20, 0, 253, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 11,
]);

/** Whether WebAssembly SIMD validates here. */
export function wasmSimdSupported(): boolean {
  return typeof WebAssembly === 'object' && WebAssembly.validate(SIMD_PROBE);
}

/**
 * A module of one function returning `i32x4.relaxed_dot_i8x16_i7x16_add_s` of three
 * `i8x16.splat`s: the one relaxed-SIMD instruction the CPU kernels use (opcode 0xfd 0x113).
 */
const RELAXED_SIMD_PROBE = new Uint8Array([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 19, 1, 17, 0, 65, 0, 253, 15, 65, 0, 253, 15, 65, 0, 253, 15, 253, 147, 2, 11,
]);

/**
 * Whether relaxed SIMD validates here (Chrome and Edge 114+). Elsewhere a module that uses it
 * is refused whole, so the CPU backend's relaxed build is loaded only where this holds.
 */
export function wasmRelaxedSimdSupported(): boolean {
  return typeof WebAssembly === 'object' && WebAssembly.validate(RELAXED_SIMD_PROBE);
}
