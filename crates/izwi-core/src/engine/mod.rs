//! The inference engine: a vLLM-style step loop over a paged KV cache.
//!
//! [`Engine`] is the async handle callers hold. It runs an [`EngineCore`] on a thread of
//! its own (model compute is blocking) and talks to it through channels: requests in,
//! streamed outputs back. Each step the core schedules sequences
//! ([`scheduler`]), runs them through the model in one batched forward pass
//! ([`executor`]) over the shared block cache ([`kv_cache`]), and turns the logits into
//! tokens and outputs ([`output`]).

pub mod batch_strategy;
pub mod beam_search;
pub mod config;
pub mod conv_state;
pub mod core;
pub mod error;
pub mod executor;
pub mod kv_cache;
pub mod metrics;
pub mod output;
pub mod request;
pub mod scheduler;
pub mod sequence;
pub mod types;

use std::collections::HashMap;
use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use tokio::sync::{mpsc, oneshot, watch};

pub use self::batch_strategy::BatchStrategy;
pub use self::config::EngineCoreConfig;
pub use self::conv_state::{ConvStateCache, ConvStateShape};
pub use self::core::EngineCore;
pub use self::error::{EngineError, Result};
pub use self::executor::{ForwardBatch, ModelExecutor, ModelSpec, SequenceChunk};
pub use self::kv_cache::{KvCacheManager, KvCacheShape, KvCacheStats, LayerKvCache};
pub use self::metrics::{MetricsCollector, MetricsSnapshot};
pub use self::output::{AudioAlignment, EngineOutput, RequestStats, StreamingOutput};
pub use self::request::{EngineCoreRequest, RequestProcessor};
pub use self::types::{FinishReason, GenerationParams, Priority, RequestId, SchedulingPolicy};

/// Queue sizes and cache state, as read between two steps.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EngineStatus {
    pub waiting: usize,
    pub running: usize,
    pub kv_cache: KvCacheStats,
}

enum Command {
    Add {
        request: EngineCoreRequest,
        outputs: mpsc::UnboundedSender<StreamingOutput>,
        accepted: oneshot::Sender<Result<RequestId>>,
    },
    Abort {
        id: RequestId,
        done: oneshot::Sender<bool>,
    },
    AppendAudio {
        id: RequestId,
        samples: Vec<f32>,
        ended: bool,
        done: oneshot::Sender<Result<()>>,
    },
    Status(oneshot::Sender<EngineStatus>),
    Stop,
}

/// A request in the engine whose final output has not been collected yet. Dropping it
/// aborts the request.
pub struct PendingRequest {
    pub id: RequestId,
    outputs: mpsc::UnboundedReceiver<StreamingOutput>,
}

impl PendingRequest {
    /// Waits for the request to end and returns its output; a request the model failed
    /// on is an error.
    pub async fn wait(mut self) -> Result<EngineOutput> {
        while let Some(chunk) = self.outputs.recv().await {
            if let Some(output) = chunk.finished {
                return match output.finish_reason {
                    FinishReason::Failed(message) => Err(EngineError::RequestFailed {
                        id: output.request_id,
                        message,
                    }),
                    _ => Ok(output),
                };
            }
        }
        Err(EngineError::Stopped)
    }
}

/// The async handle to a running engine. Cheap to share behind an `Arc`.
pub struct Engine {
    commands: std_mpsc::Sender<Command>,
    metrics: Arc<MetricsCollector>,
    stopped: watch::Receiver<bool>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Engine {
    /// Builds the core (allocating the KV cache) and starts the step loop on its own thread.
    pub fn new(config: EngineCoreConfig, executor: Box<dyn ModelExecutor>) -> Result<Self> {
        let core = EngineCore::new(config, executor)?;
        let metrics = core.metrics();
        let (commands, receiver) = std_mpsc::channel();
        let (stopped_tx, stopped) = watch::channel(false);
        let thread = std::thread::Builder::new()
            .name("izwi-engine".into())
            .spawn(move || {
                StepLoop::new(core, receiver).run();
                let _ = stopped_tx.send(true);
            })
            .map_err(|e| EngineError::Config(format!("cannot start the engine thread: {e}")))?;
        Ok(Self {
            commands,
            metrics,
            stopped,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Validates and queues a request; its outputs arrive through the returned handle
    /// (every token if `request.streaming`, else only the final output).
    pub async fn add_request(&self, request: EngineCoreRequest) -> Result<PendingRequest> {
        let (outputs_tx, outputs) = mpsc::unbounded_channel();
        let (accepted_tx, accepted) = oneshot::channel();
        self.send(Command::Add {
            request,
            outputs: outputs_tx,
            accepted: accepted_tx,
        })?;
        let id = accepted.await.map_err(|_| EngineError::Stopped)??;
        Ok(PendingRequest { id, outputs })
    }

    /// Runs a request to the end.
    pub async fn generate(&self, request: EngineCoreRequest) -> Result<EngineOutput> {
        self.add_request(request.with_streaming(false))
            .await?
            .wait()
            .await
    }

    /// Runs a request, streaming each new token; the last chunk carries the output.
    /// Dropping the receiver aborts the request.
    pub async fn generate_streaming(
        &self,
        request: EngineCoreRequest,
    ) -> Result<(RequestId, mpsc::UnboundedReceiver<StreamingOutput>)> {
        let pending = self.add_request(request.with_streaming(true)).await?;
        Ok((pending.id, pending.outputs))
    }

    /// Aborts a request and frees its cache blocks before returning. False if no such
    /// request is in the engine.
    pub async fn abort_request(&self, id: &RequestId) -> Result<bool> {
        let (done, answer) = oneshot::channel();
        self.send(Command::Abort {
            id: id.clone(),
            done,
        })?;
        answer.await.map_err(|_| EngineError::Stopped)
    }

    /// More audio of a live request (see [`EngineCoreRequest::with_live_audio`]);
    /// `ended` closes it, after which the request ends once its text has caught up.
    pub async fn append_audio(&self, id: &RequestId, samples: Vec<f32>, ended: bool) -> Result<()> {
        let (done, answer) = oneshot::channel();
        self.send(Command::AppendAudio {
            id: id.clone(),
            samples,
            ended,
            done,
        })?;
        answer.await.map_err(|_| EngineError::Stopped)?
    }

    pub async fn status(&self) -> Result<EngineStatus> {
        let (tx, rx) = oneshot::channel();
        self.send(Command::Status(tx))?;
        rx.await.map_err(|_| EngineError::Stopped)
    }

    pub async fn pending_requests(&self) -> Result<usize> {
        Ok(self.status().await?.waiting)
    }

    pub async fn running_requests(&self) -> Result<usize> {
        Ok(self.status().await?.running)
    }

    pub async fn kv_cache_stats(&self) -> Result<KvCacheStats> {
        Ok(self.status().await?.kv_cache)
    }

    pub fn metrics(&self) -> MetricsSnapshot {
        self.metrics.snapshot()
    }

    /// Resolves when the engine has stopped (after [`stop`](Self::stop)).
    pub async fn run(&self) {
        let mut stopped = self.stopped.clone();
        let _ = stopped.wait_for(|s| *s).await;
    }

    /// Stops the step loop: requests still in the engine end as aborted. Waits for the
    /// engine thread to exit.
    pub fn stop(&self) {
        let _ = self.commands.send(Command::Stop);
        let thread = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(thread) = thread {
            if thread.join().is_err() {
                tracing::error!("the engine thread panicked");
            }
        }
    }

    fn send(&self, command: Command) -> Result<()> {
        self.commands
            .send(command)
            .map_err(|_| EngineError::Stopped)
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.stop();
    }
}

struct Client {
    outputs: mpsc::UnboundedSender<StreamingOutput>,
    streaming: bool,
}

/// The engine thread: takes commands between steps, steps while there is work, and
/// routes outputs to their callers.
struct StepLoop {
    core: EngineCore,
    commands: std_mpsc::Receiver<Command>,
    clients: HashMap<RequestId, Client>,
    stopping: bool,
}

impl StepLoop {
    fn new(core: EngineCore, commands: std_mpsc::Receiver<Command>) -> Self {
        Self {
            core,
            commands,
            clients: HashMap::new(),
            stopping: false,
        }
    }

    fn run(mut self) {
        while !self.stopping {
            if !self.core.has_unfinished() || self.core.awaits_input() || self.core.was_idle() {
                // Idle, or nothing can move until live audio comes: sleep until a
                // command arrives; every handle gone means stop.
                match self.commands.recv() {
                    Ok(command) => self.handle(command),
                    Err(_) => break,
                }
            }
            // Take everything that has arrived, so requests sent together are batched
            // together from their first step.
            while let Ok(command) = self.commands.try_recv() {
                self.handle(command);
            }
            if self.stopping {
                break;
            }
            let outputs = self.core.step();
            self.route(outputs);
        }
        let outputs = self.core.abort_all();
        self.route(outputs);
    }

    fn handle(&mut self, command: Command) {
        match command {
            Command::Add {
                request,
                outputs,
                accepted,
            } => {
                let streaming = request.streaming;
                let result = self.core.add_request(request);
                if let Ok(id) = &result {
                    self.clients
                        .insert(id.clone(), Client { outputs, streaming });
                }
                let _ = accepted.send(result);
            }
            Command::Abort { id, done } => {
                let found = self.core.abort_request(&id);
                let _ = done.send(found.is_some());
                self.route(found.into_iter().collect());
            }
            Command::AppendAudio {
                id,
                samples,
                ended,
                done,
            } => match self.core.append_audio(&id, &samples, ended) {
                Ok(finished) => {
                    let _ = done.send(Ok(()));
                    self.route(finished.into_iter().collect());
                }
                Err(e) => {
                    let _ = done.send(Err(e));
                }
            },
            Command::Status(reply) => {
                let _ = reply.send(EngineStatus {
                    waiting: self.core.num_waiting(),
                    running: self.core.num_running(),
                    kv_cache: self.core.kv_cache_stats(),
                });
            }
            Command::Stop => self.stopping = true,
        }
    }

    fn route(&mut self, outputs: Vec<StreamingOutput>) {
        for output in outputs {
            let id = output.request_id.clone();
            let is_final = output.is_final();
            if let Some(client) = self.clients.get(&id) {
                if client.streaming || is_final {
                    // A closed receiver is caught below.
                    let _ = client.outputs.send(output);
                }
            }
            if is_final {
                self.clients.remove(&id);
            }
        }
        // Nobody is listening any more: stop spending compute on them.
        let gone: Vec<RequestId> = self
            .clients
            .iter()
            .filter(|(_, client)| client.outputs.is_closed())
            .map(|(id, _)| id.clone())
            .collect();
        for id in gone {
            self.clients.remove(&id);
            self.core.abort_request(&id);
        }
    }
}
