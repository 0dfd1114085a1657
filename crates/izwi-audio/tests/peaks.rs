//! Waveform peaks of a long file are computed while it decodes: the memory held stays
//! small whatever the file's length, and a caller can stop it part-way. A counting
//! allocator records the most bytes held at once; one test runs the steps in sequence,
//! so nothing else allocates meanwhile.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use izwi_audio::{decode_file, decode_peaks, peaks, AudioError};

struct Counting;

static HELD: AtomicUsize = AtomicUsize::new(0);
static MOST: AtomicUsize = AtomicUsize::new(0);

fn held(delta: isize) {
    let now = if delta >= 0 {
        HELD.fetch_add(delta as usize, Ordering::Relaxed) + delta as usize
    } else {
        HELD.fetch_sub((-delta) as usize, Ordering::Relaxed) - (-delta) as usize
    };
    MOST.fetch_max(now, Ordering::Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        held(layout.size() as isize);
        System.alloc(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        held(-(layout.size() as isize));
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        held(new_size as isize - layout.size() as isize);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The most bytes held at once while `f` runs, beyond what was held before.
fn most_held<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = HELD.load(Ordering::Relaxed);
    MOST.store(before, Ordering::Relaxed);
    let out = f();
    (out, MOST.load(Ordering::Relaxed) - before)
}

/// Ten minutes of 16 kHz mono, written as it is made: quiet, with a loud last minute.
fn long_wav(path: &Path) -> usize {
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: 16_000,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut w = hound::WavWriter::create(path, spec).unwrap();
    let frames = 16_000 * 600;
    for i in 0..frames {
        let amplitude = if i >= frames / 10 * 9 {
            16_000.0
        } else {
            300.0
        };
        let s = (i as f32 * 0.05).sin() * amplitude;
        w.write_sample(s as i16).unwrap();
    }
    w.finalize().unwrap();
    frames
}

#[test]
fn long_files_give_peaks_in_bounded_memory_and_can_be_stopped() {
    const LIMIT: usize = 8 << 20;
    let dir = tempfile::tempdir().unwrap();
    let wav = dir.path().join("long.wav");
    let frames = long_wav(&wav);

    let (streamed, most) = most_held(|| decode_peaks(&wav, 1000, &|| false).unwrap());
    assert!(most < LIMIT, "held {most} bytes at once");
    assert_eq!(streamed.len(), 1000);
    assert!(streamed[..890].iter().all(|&p| p < 0.02), "{streamed:?}");
    assert!(streamed[910..].iter().all(|&p| p > 0.45), "{streamed:?}");

    // The whole-file way holds every sample: the measure above would have caught it.
    let (whole, most) = most_held(|| peaks(&decode_file(&wav).unwrap().to_mono(), 1000));
    assert!(most > frames * 4, "held {most} bytes at once");
    assert_eq!(whole.len(), streamed.len());

    // Stopped after the third packet: no packet is taken in after that.
    let asked = Cell::new(0);
    let stopped = decode_peaks(&wav, 1000, &|| {
        asked.set(asked.get() + 1);
        asked.get() > 3
    });
    assert!(matches!(stopped, Err(AudioError::Cancelled)), "{stopped:?}");
    assert_eq!(asked.get(), 4);
}
