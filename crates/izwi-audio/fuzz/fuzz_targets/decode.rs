//! Arbitrary bytes into the decoder: it must return (audio or an error), never panic,
//! hang, or allocate without bound.
#![no_main]

use libfuzzer_sys::fuzz_target;

/// The extension hints callers pass. The first input byte picks one, so one run covers
/// them all without decoding every input eight times.
const HINTS: [Option<&str>; 9] = [
    None,
    Some("wav"),
    Some("flac"),
    Some("mp3"),
    Some("ogg"),
    Some("m4a"),
    Some("mp4"),
    Some("mkv"),
    Some("aac"),
];

fuzz_target!(init: {
    // symphonia 0.5 panics on some malformed input (arithmetic overflow, slice bounds);
    // decode_bytes catches those and returns AudioError::Corrupt, which is the property
    // under test. libfuzzer-sys's hook would abort even on a caught panic, so replace it
    // with one that only logs where the panic was (for triage). A panic that escapes
    // decode_bytes still aborts: libfuzzer-sys catches it and calls abort.
    std::panic::set_hook(Box::new(|info| {
        if let Some(at) = info.location() {
            eprintln!("caught panic at {}:{}", at.file(), at.line());
        }
    }));
}, |data: &[u8]| {
    let Some((&first, bytes)) = data.split_first() else {
        return;
    };
    let hint = HINTS[usize::from(first) % HINTS.len()];
    let _ = izwi_audio::decode_bytes(bytes, hint);
});
