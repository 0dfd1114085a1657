use candle_core::{Device, Tensor};
use izwi_core::models::shared::packed_conv::PackedConv;
use std::time::Instant;
fn main() {
    let dev = Device::Cpu;
    for (cin, cout, k, t) in [
        (192usize, 384usize, 5usize, 275usize),
        (192, 384, 5, 93),
        (192, 768, 3, 80),
        (768, 192, 3, 80),
        (192, 384, 1, 275),
    ] {
        let w = Tensor::randn(0f32, 1., (cout, cin, k), &dev).unwrap();
        let x = Tensor::randn(0f32, 1., (1, cin, t), &dev).unwrap();
        let conv = PackedConv::pack(&w, None, 1, (k / 2, k / 2)).unwrap();
        let fl = 2.0 * (cout * cin * k * t) as f64;
        rayon::scope(|_| {
            for _ in 0..2 {
                let n = 300;
                let s = Instant::now();
                for _ in 0..n {
                    let _ = conv.forward(&x).unwrap();
                }
                let el = s.elapsed().as_secs_f64() / n as f64;
                let wm = w.reshape((cout, cin * k)).unwrap();
                let cols = Tensor::randn(0f32, 1., (1, cin * k, t), &dev).unwrap();
                let s = Instant::now();
                for _ in 0..n {
                    let _ = wm.broadcast_matmul(&cols).unwrap();
                }
                let el2 = s.elapsed().as_secs_f64() / n as f64;
                println!("{cin}->{cout} k{k} t{t}: packed {:.1} us {:.0} GFLOP/s | gemm {:.1} us {:.0} GFLOP/s", el * 1e6, fl / el / 1e9, el2 * 1e6, fl / el2 / 1e9);
            }
        });
    }
}
