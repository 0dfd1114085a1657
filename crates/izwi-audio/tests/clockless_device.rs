//! A capture device without a clock (ALSA's `null`, which alsa-lib defines everywhere)
//! delivers zeros as fast as it is read: the microphone says so instead of buffering
//! without end, and returns to its caller all along (so a Stop is seen).

#![cfg(target_os = "linux")]

use std::time::Duration;

use izwi_audio::Microphone;

#[test]
fn a_device_faster_than_real_time_is_refused() {
    let mut mic = Microphone::open(Some("alsa:null")).expect("ALSA's null device opens");
    let mut reads = 0;
    let error = loop {
        match mic.recv(Duration::from_millis(100)) {
            Ok(_) => reads += 1,
            Err(e) => break e,
        }
        assert!(reads < 100_000, "still reading after {reads} calls");
    };
    assert!(
        error.to_string().contains("faster than real time"),
        "{error}"
    );
}
