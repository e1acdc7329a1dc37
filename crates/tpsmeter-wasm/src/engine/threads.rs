//! Wasm threads for the CPU backend (the `threads` build: `atomics` on shared memory).
//!
//! The engine's Worker has the page start N more Workers (Firefox's `new Worker` inside a
//! Worker sometimes never returns) and sends each this module and its memory; each calls
//! [`run_thread`] and blocks there, waiting for a rayon thread to run. Once every one is
//! waiting, the engine's Worker calls [`start_thread_pool`], which builds a rayon pool whose
//! threads are handed to them. The CPU model then `install`s each forward pass into that pool,
//! as it does natively.
//!
//! wasm-bindgen-rayon does the same for rayon's global pool, but its JS half spawns its Workers
//! from a script of its own located by the bundler (or fetched as a blob), which the npm
//! package's Worker layout (and Vite's pre-bundling of it) does not give; ours are the
//! engine's own Worker script, already located and emitted for every page the engine runs on.
//! The Rust half is a channel.

use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{LazyLock, Mutex};

use rayon::{ThreadBuilder, ThreadPoolBuilder};
use wasm_bindgen::prelude::*;

use super::{gpu_err, named};

/// The rayon threads waiting for a Worker to run them. A Worker takes one at a time under
/// the lock (a `Receiver` is not shared between threads otherwise).
static THREADS: LazyLock<(Sender<ThreadBuilder>, Mutex<Receiver<ThreadBuilder>>)> =
    LazyLock::new(|| {
        let (tx, rx) = channel();
        (tx, Mutex::new(rx))
    });

/// The module's `WebAssembly.Module`, which each thread's Worker instantiates again.
#[wasm_bindgen(js_name = threadModule)]
pub fn wasm_module() -> JsValue {
    wasm_bindgen::module()
}

/// The module's shared `WebAssembly.Memory`, which each thread's Worker imports.
#[wasm_bindgen(js_name = threadMemory)]
pub fn wasm_memory() -> JsValue {
    wasm_bindgen::memory()
}

/// Runs one rayon thread on the calling Worker: blocks until [`start_thread_pool`] hands one
/// over, then runs it for the life of the page's pool (never returns while it lives).
#[wasm_bindgen(js_name = runThread)]
pub fn run_thread() -> Result<(), JsValue> {
    let builder = {
        let rx = THREADS
            .1
            .lock()
            .map_err(|_| named("InvalidState", "a thread of the pool failed while starting"))?;
        rx.recv().map_err(|_| {
            named(
                "InvalidState",
                "the thread pool was dropped before it started",
            )
        })?
    };
    builder.run();
    Ok(())
}

/// Builds the pool of `threads` threads that every CPU model of this module computes on, to
/// be run by Workers already blocked in [`run_thread`] (one each). Call it once.
#[wasm_bindgen(js_name = startThreadPool)]
pub fn start_thread_pool(threads: usize) -> Result<(), JsValue> {
    if threads == 0 || threads > tpsmeter_gpu::cpu::cpu_runtime::MAX_THREADS {
        return Err(named(
            "InvalidRequest",
            &format!(
                "threads must be 1 to {}, not {threads}",
                tpsmeter_gpu::cpu::cpu_runtime::MAX_THREADS
            ),
        ));
    }
    let tx = THREADS.0.clone();
    let pool = ThreadPoolBuilder::new()
        .num_threads(threads)
        // The channel is unbounded: every thread is queued at once, and each Worker takes one.
        .spawn_handler(move |thread| {
            tx.send(thread)
                .map_err(|_| std::io::Error::other("the pool's Workers are gone"))
        })
        .build()
        .map_err(|e| named("ThreadPool", &e.to_string()))?;
    tpsmeter_gpu::cpu::set_web_pool(pool).map_err(|e| gpu_err(e.into()))
}
