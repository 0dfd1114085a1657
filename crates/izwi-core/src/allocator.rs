//! The C allocator, tuned for tensor work. Inference allocates and frees buffers of a
//! few megabytes many times a second. glibc gives every block above its mmap threshold
//! pages of its own and unmaps them on free, so each buffer costs page faults and
//! zeroed pages: a quarter of Piper's synthesis time went to the kernel. Keeping blocks
//! up to glibc's largest threshold in the heap, and returning free heap to the system
//! only beyond [`TRIM_THRESHOLD`], lets freed buffers be reused. Other allocators
//! (macOS, Windows, musl) are left as they are.

/// glibc's largest mmap threshold (`DEFAULT_MMAP_THRESHOLD_MAX` on 64-bit).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD: i32 = 32 << 20;

/// How much free memory the heap keeps before it gives some back.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TRIM_THRESHOLD: i32 = 64 << 20;

/// Called by [`crate::tune_for_inference`]. A user's own `MALLOC_MMAP_THRESHOLD_` or
/// `MALLOC_TRIM_THRESHOLD_` wins: then nothing is changed.
pub fn tune() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let user_set = ["MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"]
            .iter()
            .any(|name| std::env::var_os(name).is_some());
        if !user_set {
            // SAFETY: mallopt only sets allocator parameters; both values are in the
            // ranges glibc accepts, and a refusal (return 0) leaves its defaults.
            unsafe {
                libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
                libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD);
            }
        }
    }
}
