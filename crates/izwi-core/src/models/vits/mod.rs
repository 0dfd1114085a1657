//! VITS, the model behind Piper voices, run natively in candle: [`Vits::from_onnx`]
//! loads a voice's `.onnx` and `.onnx.json`, [`Vits::synthesize`] turns phoneme ids
//! into PCM. Piper ships voices as ONNX graphs; the weights and each layer's
//! hyperparameters are read out of the graph ([`onnx`], [`weights`]) and the network
//! is our own code, so no ONNX runtime is involved.
//!
//! | file | what |
//! |---|---|
//! | `onnx.rs` | a bounded protobuf reader for the initializers and nodes of an ONNX file |
//! | `weights.rs` | initializers under piper's PyTorch names, unnamed ones traced through the graph |
//! | `phonemes.rs` | text → espeak-ng IPA → the voice's phoneme ids, as piper does it |
//! | `config.rs` | the `.onnx.json`: phoneme ids, speakers, sample rate, default scales |
//! | `layers.rs` | convolutions (channel-major, and time-major for the vocoder), layer norm |
//! | `text_encoder.rs` | the phoneme transformer with relative-position attention |
//! | `duration.rs`, `spline.rs` | durations: the stochastic flow (with its spline) or the plain predictor |
//! | `flow.rs` | the residual coupling flow, run in reverse |
//! | `decoder.rs` | the HiFi-GAN vocoder |
//! | `model.rs` | the whole synthesis, batching and noise |
//!
//! Parity with piper's onnxruntime output is tested in `tests/vits_parity.rs`.

mod config;
mod decoder;
mod duration;
mod flow;
mod layers;
mod model;
pub mod phonemes;
mod spline;
mod text_encoder;
pub mod weights;

pub use config::{AudioConfig, EspeakConfig, Scales, VoiceConfig};
pub use model::{ModuleTimings, Synthesis, Vits, VitsError};
pub use phonemes::{phonemize, PhonemizeError, PhonemizedSentence};
