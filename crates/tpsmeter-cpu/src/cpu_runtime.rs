//! The CPU backend's threads and instruction set, chosen once per model.

use std::sync::Arc;
use tpsmeter_model::ModelError;

use crate::error::{CpuError, Result};

/// Which vector instructions the kernels run with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Simd {
    /// x86-64 with AVX2 and FMA (detected at run time).
    Avx2,
    /// aarch64's NEON (always there).
    Neon,
    /// wasm's 128-bit SIMD (a build with `simd128`).
    Simd128,
    /// Whatever the target's baseline gives (SSE2 on x86-64).
    Portable,
}

impl Simd {
    /// The best this machine runs.
    pub fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                return Simd::Avx2;
            }
        }
        if cfg!(target_arch = "aarch64") {
            Simd::Neon
        } else if cfg!(target_arch = "wasm32") {
            // The wasm kernels are compiled with `simd128` whatever the build's flags
            // (`matrix::rows_simd128`): a browser without SIMD refuses the module at load.
            Simd::Simd128
        } else {
            Simd::Portable
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Simd::Avx2 => "avx2",
            Simd::Neon => "neon",
            // The build for browsers with relaxed SIMD (`simd128.rs`).
            Simd::Simd128 if cfg!(feature = "relaxed-simd") => "simd128+relaxed",
            Simd::Simd128 => "simd128",
            Simd::Portable => "portable",
        }
    }
}

/// How the CPU backend runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuOptions {
    /// Worker threads; `None`: one per core the OS gives this process.
    pub threads: Option<usize>,
    /// Force the portable kernels (tests compare them with the SIMD ones).
    pub portable: bool,
    /// Multiply every weight, expanded to f32, with f32 activations (no 8-bit rounding):
    /// the precision of an f32 implementation, for comparing with one (llama.cpp on a file's
    /// F32 expansion). Several times slower; not for use.
    pub exact: bool,
}

/// A thread pool and the kernels' instruction set.
#[derive(Debug)]
pub struct CpuRuntime {
    /// Natively a pool of its own. On wasm32 the page's pool of Web Workers where a threaded
    /// build started one ([`set_web_pool`]), and none otherwise: the calling thread alone.
    pub(super) pool: Option<Arc<rayon::ThreadPool>>,
    pub(super) simd: Simd,
    pub(super) exact: bool,
    threads: usize,
}

/// Most threads a pool is given (a larger request is an error, not a thousand idle threads).
pub const MAX_THREADS: usize = 256;

impl CpuRuntime {
    pub fn new(opts: CpuOptions) -> Result<Self> {
        let threads = match opts.threads {
            Some(0) => {
                return Err(CpuError::from(ModelError::InvalidOption {
                    option: "CPU threads",
                    reason: format!(
                        "0 threads cannot run anything; give 1 to {MAX_THREADS}, or leave it \
                         unset for one per core"
                    ),
                }));
            }
            Some(n) if n > MAX_THREADS => {
                return Err(CpuError::from(ModelError::LimitExceeded {
                    what: "CPU threads".into(),
                    value: n as u64,
                    limit: MAX_THREADS as u64,
                }));
            }
            Some(n) => n,
            None => std::thread::available_parallelism().map_or(1, |n| n.get()),
        };
        let (pool, threads) = Self::pool(threads)?;
        let simd = if opts.portable {
            Simd::Portable
        } else {
            Simd::detect()
        };
        Ok(Self {
            pool,
            simd,
            exact: opts.exact,
            threads,
        })
    }

    pub fn threads(&self) -> usize {
        self.threads
    }

    pub fn simd(&self) -> Simd {
        self.simd
    }

    /// Runs `f` on the pool, so that the parallel loops inside it split without a hand-off.
    pub fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        match &self.pool {
            Some(pool) => pool.install(f),
            None => f(),
        }
    }

    #[cfg(not(target_arch = "wasm32"))]
    fn pool(threads: usize) -> Result<(Option<Arc<rayon::ThreadPool>>, usize)> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("tpsmeter-cpu-{i}"))
            .build()
            .map_err(|e| CpuError::ThreadPool {
                reason: e.to_string(),
            })?;
        Ok((Some(Arc::new(pool)), threads))
    }

    /// On wasm32 the threads are the page's, whatever was asked: a page sets them when it
    /// starts its Web Workers ([`set_web_pool`]); one where the build or the page has none.
    #[cfg(target_arch = "wasm32")]
    fn pool(_threads: usize) -> Result<(Option<Arc<rayon::ThreadPool>>, usize)> {
        Ok(match WEB_POOL.get() {
            Some(pool) => (Some(Arc::clone(pool)), pool.current_num_threads()),
            None => (None, 1),
        })
    }
}

/// The pool of Web Workers a threaded wasm build runs its kernels on, set once per module
/// instance. Not rayon's global pool: a pass is `install`ed into this one as natively, so
/// it hands off once, where loops called from outside a pool would each wake its threads
/// from a thread that is not one of them (hundreds of hand-offs a token).
#[cfg(target_arch = "wasm32")]
static WEB_POOL: std::sync::OnceLock<Arc<rayon::ThreadPool>> = std::sync::OnceLock::new();

/// Makes `pool` the one every CPU model of this module instance computes on (a threaded
/// wasm build's Web Workers). A second call is an error: the first pool's threads are
/// already running the page's models.
#[cfg(target_arch = "wasm32")]
pub fn set_web_pool(pool: rayon::ThreadPool) -> Result<()> {
    WEB_POOL
        .set(Arc::new(pool))
        .map_err(|_| CpuError::ThreadPool {
            reason: "this module's thread pool was started already".into(),
        })
}
