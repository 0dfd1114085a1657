//! Times decoding and the full ASR load of audio files:
//!     cargo run --release -p izwi-audio --example decode_speed -- FILE...
use std::time::Instant;

fn main() {
    for path in std::env::args().skip(1) {
        let started = Instant::now();
        let audio = match izwi_audio::decode_file(&path) {
            Ok(audio) => audio,
            Err(e) => {
                eprintln!("{path}: {e}");
                continue;
            }
        };
        let decode = started.elapsed();
        let started = Instant::now();
        let samples = izwi_audio::load_for_asr(&path).unwrap_or_default();
        let asr = started.elapsed();
        let seconds = audio.duration_seconds();
        println!(
            "{path}: {seconds:.1} s, {} Hz, {} ch; decode {:.0} ms ({:.0}x real time); \
             decode + downmix + resample to 16 kHz {:.0} ms ({:.0}x), {} samples",
            audio.sample_rate,
            audio.channels,
            decode.as_secs_f64() * 1e3,
            seconds / decode.as_secs_f64(),
            asr.as_secs_f64() * 1e3,
            seconds / asr.as_secs_f64(),
            samples.len()
        );
    }
}
