use thiserror::Error;

use super::types::RequestId;

#[derive(Debug, Error)]
pub enum EngineError {
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    #[error(
        "request needs {needed_blocks} KV-cache blocks ({tokens} tokens) but the whole cache has \
         {total_blocks}; lower max_tokens or raise the KV-cache memory limit"
    )]
    RequestTooLarge {
        tokens: usize,
        needed_blocks: usize,
        total_blocks: usize,
    },
    #[error("a request with id {0} is already in the engine")]
    DuplicateRequest(RequestId),
    #[error("no request with id {0} is in the engine")]
    UnknownRequest(RequestId),
    #[error("invalid engine configuration: {0}")]
    Config(String),
    #[error("request {id} failed: {message}")]
    RequestFailed { id: RequestId, message: String },
    #[error("the engine has stopped")]
    Stopped,
    #[error(transparent)]
    Candle(#[from] candle_core::Error),
}

pub type Result<T, E = EngineError> = std::result::Result<T, E>;
