//! One pool of CPU threads for all inference work. Engine steps and Piper's synthesis
//! run on workers of rayon's pool, and our kernels and candle's matmuls split their
//! work over it. candle's CPU backend also keeps a pool of its own for elementwise
//! operations on large tensors, whose threads spin after each operation before they
//! sleep: beside rayon's busy workers they take cores from them (14 % of the CPU time of
//! a Piper paragraph went to that spin, docs/speed.md). Sized to no threads, that pool
//! runs each such operation on the worker that asked for it.

/// candle's variable for its elementwise pool, threads counted with the caller.
const CANDLE_POOL_THREADS: &str = "CANDLE_NUM_THREADS";

/// Call once, early in `main`, before any other thread starts (it sets an environment
/// variable, which is not safe while other threads read the environment). A user's own
/// `CANDLE_NUM_THREADS` wins.
pub fn use_one_pool() {
    if std::env::var_os(CANDLE_POOL_THREADS).is_none() {
        std::env::set_var(CANDLE_POOL_THREADS, "1");
    }
}
