//! How a step's token budget is shared between decodes (one token for each sequence
//! that is generating) and prefill chunks (prompts, and sequences recomputing after a
//! preemption): the pluggable batch strategies of a continuous-batching server.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BatchStrategy {
    /// Every decode first, prefill fills what is left: the smoothest token streams
    /// (chat, dictation), new requests wait longest for their first token.
    #[default]
    DecodeMaximal,
    /// Prefill first, decodes fill what is left: new requests start soonest, the most
    /// work per step when many arrive at once (batch export, bulk transcription);
    /// running streams may pause while prompts are read.
    PrefillPriority,
    /// Half the budget for each; either side's unused share goes to the other.
    Balanced,
}

impl BatchStrategy {
    pub const ALL: [BatchStrategy; 3] = [
        BatchStrategy::DecodeMaximal,
        BatchStrategy::PrefillPriority,
        BatchStrategy::Balanced,
    ];

    /// Tokens of `budget` that decodes may take before prefill, when prefill chunks
    /// would use `prefill_demand` tokens. Prefill then takes what it needs of the rest,
    /// and decodes not yet run take whatever prefill leaves.
    pub fn decode_share(self, budget: usize, prefill_demand: usize) -> usize {
        let after_prefill = budget.saturating_sub(prefill_demand);
        match self {
            BatchStrategy::DecodeMaximal => budget,
            BatchStrategy::PrefillPriority => after_prefill,
            BatchStrategy::Balanced => (budget / 2).max(after_prefill),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            BatchStrategy::DecodeMaximal => "decode-maximal",
            BatchStrategy::PrefillPriority => "prefill-priority",
            BatchStrategy::Balanced => "balanced",
        }
    }
}

impl std::str::FromStr for BatchStrategy {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|strategy| strategy.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown batch strategy {s:?}: decode-maximal, prefill-priority or balanced"
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::BatchStrategy::*;
    use super::*;

    #[test]
    fn decode_shares_follow_each_strategy() {
        // 64 tokens, prefill wanting 100, 40 or none.
        assert_eq!(DecodeMaximal.decode_share(64, 100), 64);
        assert_eq!(PrefillPriority.decode_share(64, 100), 0);
        assert_eq!(PrefillPriority.decode_share(64, 40), 24);
        assert_eq!(Balanced.decode_share(64, 100), 32);
        assert_eq!(Balanced.decode_share(64, 10), 54, "prefill's unused half");
        for strategy in BatchStrategy::ALL {
            assert_eq!(strategy.decode_share(64, 0), 64, "{strategy:?} alone");
        }
    }

    #[test]
    fn names_round_trip_and_unknown_ones_are_refused() {
        for strategy in BatchStrategy::ALL {
            assert_eq!(strategy.name().parse::<BatchStrategy>(), Ok(strategy));
        }
        let err = "fastest".parse::<BatchStrategy>().expect_err("unknown");
        assert!(err.contains("decode-maximal, prefill-priority or balanced"));
    }
}
