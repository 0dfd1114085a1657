//! Speech in: 16 kHz samples → log-mel → FastConformer → adapter, one backbone
//! embedding per 8 mel frames (80 ms).

use candle_core::{Device, Result, Tensor};
use candle_nn::VarBuilder;

use super::adapter::AudioAdapter;
use super::config::Lfm2AudioConfig;
use super::conformer::ConformerEncoder;
use super::mel::NemoMel;

pub struct AudioEncoder {
    mel: NemoMel,
    conformer: ConformerEncoder,
    adapter: AudioAdapter,
    sample_rate: usize,
    device: Device,
}

impl AudioEncoder {
    /// `vb` at the checkpoint's root (`conformer.*`, `audio_adapter.*`).
    pub fn load(config: &Lfm2AudioConfig, vb: &VarBuilder) -> Result<Self> {
        Ok(Self {
            mel: NemoMel::new(&config.preprocessor)?,
            conformer: ConformerEncoder::load(&config.encoder, vb.pp("conformer"))?,
            adapter: AudioAdapter::load(
                config.encoder.d_model,
                config.lfm.hidden_size,
                vb.pp("audio_adapter"),
            )?,
            sample_rate: config.preprocessor.sample_rate,
            device: vb.device().clone(),
        })
    }

    /// The rate the samples must be at.
    pub fn sample_rate(&self) -> usize {
        self.sample_rate
    }

    /// Backbone positions that `samples` samples of audio take.
    pub fn embedding_count(&self, samples: usize) -> usize {
        self.conformer.output_frames(self.mel.frames(samples))
    }

    /// The log-mel features of the samples: `[n_mels, frames]`, on the CPU.
    pub fn mel(&self, samples: &[f32]) -> Result<Tensor> {
        self.mel.compute(samples)
    }

    /// The encoder's output for mel features: `[frames', d_model]`.
    pub fn encode_mel(&self, mel: &Tensor) -> Result<Tensor> {
        self.conformer.forward(&mel.to_device(&self.device)?)
    }

    /// The adapter's output for encoder frames: `[frames', hidden]`.
    pub fn adapt(&self, encoded: &Tensor) -> Result<Tensor> {
        self.adapter.forward(encoded)
    }

    /// The backbone embeddings of one utterance: `[positions, hidden]`.
    pub fn embed(&self, samples: &[f32]) -> Result<Tensor> {
        self.adapt(&self.encode_mel(&self.mel(samples)?)?)
    }
}
