use candle_core::Device;
use izwi_core::models::qwen3_tts::codec::CodecDecoder;
use std::time::Instant;

fn main() {
    izwi_core::tune_for_inference();
    let dir = std::path::PathBuf::from("/root/.cache/izwi/q3bench/speech_tokenizer");
    let codec = CodecDecoder::from_dir(&dir, &Device::Cpu).unwrap();
    let frames: Vec<Vec<u32>> = (0..37u32)
        .map(|f| (0..16u32).map(|c| (f * 131 + c * 977) % 2048).collect())
        .collect();
    for _ in 0..3 {
        let t = Instant::now();
        let wav = codec.forward(&frames).unwrap();
        println!(
            "37 frames: {:.3} s, {} samples, sum {:.4}",
            t.elapsed().as_secs_f64(),
            wav.len(),
            wav.iter().map(|v| v.abs()).sum::<f32>()
        );
    }
}
