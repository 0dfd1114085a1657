use candle_core::Device;
use izwi_core::models::vits::{phonemize, Vits};
use izwi_core::text::{split_sentences, Espeak};
use std::path::PathBuf;
use std::time::Instant;

const TEXT: &str = "Thank you for calling. Your appointment is confirmed for Tuesday morning at \
nine. Please remember to bring your passport, and a printed copy of your ticket. The weather \
today will be sunny, with a light breeze in the afternoon and a chance of rain later in the \
evening. She opened the window and listened to the birds. Our team finished the project two \
weeks earlier than we had planned, which gave everyone time to rest. Goodbye!";

fn main() {
    izwi_core::tune_for_inference();
    let voice = PathBuf::from(".assets/voices/en_US-joe-medium/en_US-joe-medium.onnx");
    let json = PathBuf::from(".assets/voices/en_US-joe-medium/en_US-joe-medium.onnx.json");
    let vits = Vits::from_onnx(&voice, &json, &Device::Cpu)
        .and_then(Vits::with_bf16_vocoder)
        .map(std::sync::Arc::new)
        .unwrap();
    let espeak = Espeak::find().unwrap();
    let text = vec![TEXT; 3].join(" ");
    let ids: Vec<Vec<i64>> = phonemize(&espeak, vits.config(), &split_sentences(&text))
        .unwrap()
        .into_iter()
        .map(|s| s.ids)
        .collect();
    let scales = vits.config().inference;
    vits.synthesize(&ids[0], None, scales, 0).unwrap();
    let mode = std::env::args().nth(1).unwrap_or_default();
    for _ in 0..2 {
        let t = Instant::now();
        let mut samples = 0;
        match mode.as_str() {
            "seq" => {
                for (i, s) in ids.iter().enumerate() {
                    samples += vits.synthesize(s, None, scales, i as u64).unwrap().len();
                }
            }
            "seqpool" => {
                for (i, s) in ids.iter().enumerate() {
                    samples +=
                        rayon::scope(|_| vits.synthesize(s, None, scales, i as u64).unwrap().len());
                }
            }
            "threads2" => {
                let (a, b): (Vec<_>, Vec<_>) =
                    ids.iter().enumerate().partition(|(i, _)| i % 2 == 0);
                samples = std::thread::scope(|sc| {
                    let ha = sc.spawn(|| {
                        a.iter()
                            .map(|(i, s)| {
                                vits.synthesize(s, None, scales, *i as u64).unwrap().len()
                            })
                            .sum::<usize>()
                    });
                    let hb = sc.spawn(|| {
                        b.iter()
                            .map(|(i, s)| {
                                vits.synthesize(s, None, scales, *i as u64).unwrap().len()
                            })
                            .sum::<usize>()
                    });
                    ha.join().unwrap() + hb.join().unwrap()
                });
            }
            "pool2" => {
                use rayon::prelude::*;
                samples = ids
                    .par_iter()
                    .enumerate()
                    .with_max_len(1)
                    .map(|(i, s)| vits.synthesize(s, None, scales, i as u64).unwrap().len())
                    .sum();
            }
            "batch2" => {
                for (i, c) in ids.chunks(2).enumerate() {
                    let refs: Vec<&[i64]> = c.iter().map(|v| v.as_slice()).collect();
                    samples += vits
                        .synthesize_batch(&refs, None, scales, i as u64)
                        .unwrap()
                        .iter()
                        .map(|s| s.audio.len())
                        .sum::<usize>();
                }
            }
            m if m.starts_with("ahead") => {
                let k: usize = m[5..].parse().unwrap();
                let mut pending = std::collections::VecDeque::new();
                let vits = vits.clone();
                for (i, s) in ids.iter().enumerate() {
                    if pending.len() >= k {
                        let rx: std::sync::mpsc::Receiver<usize> = pending.pop_front().unwrap();
                        samples += rx.recv().unwrap();
                    }
                    let (tx, rx) = std::sync::mpsc::channel();
                    let (v, s) = (vits.clone(), s.clone());
                    rayon::spawn(move || {
                        let _ = tx.send(v.synthesize(&s, None, scales, i as u64).unwrap().len());
                    });
                    pending.push_back(rx);
                }
                for rx in pending {
                    samples += rx.recv().unwrap();
                }
            }
            _ => panic!("mode"),
        }
        let el = t.elapsed().as_secs_f64();
        println!(
            "{mode}: {:.2} s for {:.1} s audio ({} sentences)",
            el,
            samples as f64 / 22050.0,
            ids.len()
        );
    }
}
