//! Import of CTranslate2 Whisper checkpoints.
