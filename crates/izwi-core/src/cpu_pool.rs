//! candle's second pool of CPU threads, told to sleep sooner. Engine steps and Piper's
//! synthesis run on workers of rayon's pool, and our kernels and candle's float
//! matmuls split their work over it. candle's CPU backend also keeps a pool of its own,
//! for its quantized matmuls (GGUF chat models) and its elementwise operations on large
//! tensors, whose threads spin after each task before they sleep: 25 000 times by
//! default. Beside rayon's busy workers that spin takes their cores (11–14 % of the CPU
//! time of a Piper paragraph went to it, docs/speed.md). A short spin keeps the pool
//! awake between the matmuls of a decode step, so GGUF decoding keeps its speed; with
//! no pool at all it ran a third slower.

/// candle's variable for how long its pool's threads spin before they sleep.
const SPIN_LIMIT_VARIABLE: &str = "CANDLE_BARRIER_POOL_SPIN_LIMIT";
/// Spins before a thread of candle's pool sleeps. On the 2-core machine (docs/speed.md):
/// 500–1 500 gave Piper's whole paragraph and SmolLM2's decode their best times
/// together; 100 slowed the decode by a fifth, 5 000 and more slowed Piper.
const SPIN_LIMIT: &str = "1000";

/// Call once, early in `main`, before any other thread starts (it sets an environment
/// variable, which is not safe while other threads read the environment). A user's own
/// `CANDLE_BARRIER_POOL_SPIN_LIMIT` wins.
pub fn shorten_spin() {
    if std::env::var_os(SPIN_LIMIT_VARIABLE).is_none() {
        std::env::set_var(SPIN_LIMIT_VARIABLE, SPIN_LIMIT);
    }
}
