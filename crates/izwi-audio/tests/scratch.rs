mod common;
use common::*;
use izwi_audio::*;
#[test]
fn scratch() {
    let show = |name: &str, r: Result<Audio, AudioError>| match r {
        Ok(a) => println!(
            "{name}: OK {} Hz {} ch {:.3} s",
            a.sample_rate,
            a.channels,
            a.duration_seconds()
        ),
        Err(e) => println!("{name}: {e:?}"),
    };
    let mut rng = Rng(1);
    for f in [
        "tone440_stereo_44k.mp3",
        "tone440_stereo_22k.flac",
        "tone440_s16_mono_8k.wav",
        "tone440_stereo_44k.ogg",
        "tone440_stereo_44k.m4a",
    ] {
        let b = fixture_bytes(f);
        show(&format!("{f} half"), decode_bytes(&b[..b.len() / 2], None));
        show(&format!("{f} 40 bytes"), decode_bytes(&b[..40], None));
        let mut g = b.clone();
        let n = g.len();
        for x in &mut g[n / 4..] {
            *x = rng.next_u64() as u8;
        }
        show(&format!("{f} garbage after 1/4"), decode_bytes(&g, None));
        let mut g = b.clone();
        let n = g.len();
        for x in &mut g[n / 3..n / 3 + 200] {
            *x = rng.next_u64() as u8;
        }
        show(
            &format!("{f} 200 garbage bytes at 1/3"),
            decode_bytes(&g, None),
        );
    }
    for atom in [&b"stsc"[..], b"stsz", b"stco", b"stts"] {
        let mut b = fixture_bytes("tone440_stereo_44k.m4a");
        let pos = b.windows(4).position(|w| w == atom).unwrap();
        let off = if atom == b"stsz" { pos + 12 } else { pos + 8 };
        b[off..off + 4].copy_from_slice(&0xFFFF_FFF0u32.to_be_bytes());
        let t = std::time::Instant::now();
        show(
            &format!("{:?} huge count", std::str::from_utf8(atom)),
            decode_bytes(&b, None),
        );
        println!("   in {:?}", t.elapsed());
    }
}
