//! Hostile headers must not make the decoder allocate memory the input cannot justify.
//! A counting allocator records the largest single allocation while each input decodes.
//! Everything runs in one test, in sequence, so nothing else allocates meanwhile.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use izwi_audio::decode_bytes;

struct Counting;

static LARGEST: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        System.alloc(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LARGEST.fetch_max(new_size, Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The largest single allocation made while decoding `bytes`.
fn largest_allocation(bytes: &[u8], hint: Option<&str>) -> usize {
    LARGEST.store(0, Ordering::Relaxed);
    let _ = decode_bytes(bytes, hint);
    LARGEST.load(Ordering::Relaxed)
}

#[test]
fn hostile_headers_do_not_allocate_for_their_claims() {
    const LIMIT: usize = 16 << 20;

    // A WAV header claiming 4 GB of samples.
    let wav = wav_bytes(2, 44_100, 16, 0xFFFF_FF00, &[0; 4000]);
    assert!(largest_allocation(&wav, Some("wav")) < LIMIT);

    // MP4 sample tables claiming 4 billion entries.
    for (atom, count_at) in [("stsc", 8), ("stsz", 12), ("stco", 8), ("stts", 8)] {
        let mut m4a = fixture_bytes("tone440_stereo_44k.m4a");
        let pos = m4a.windows(4).position(|w| w == atom.as_bytes()).unwrap();
        m4a[pos + count_at..pos + count_at + 4].copy_from_slice(&0xFFFF_FFF0u32.to_be_bytes());
        let largest = largest_allocation(&m4a, None);
        assert!(largest < LIMIT, "{atom}: {largest} bytes");
    }

    // Found by cargo-fuzz: a 13 KB MP4 whose undecodable packet claims hours of duration.
    // The silence standing in for it used to grow the output to hundreds of MB.
    let input = include_bytes!("fixtures/fuzz/m4a_huge_packet_duration.bin");
    let largest = largest_allocation(&input[1..], None);
    assert!(largest < LIMIT, "{largest} bytes");

    // For scale: decoding a valid 1 s file stays far below the limit too.
    let mp3 = fixture_bytes("tone440_stereo_44k.mp3");
    assert!(largest_allocation(&mp3, None) < LIMIT);
}
