//! [`MessageAccumulator`]: folds [`StreamEvent`](super::StreamEvent)s into an
//! [`AssistantMessage`](super::AssistantMessage). Being written.

/// Builds an assistant message from stream events. Being written.
#[derive(Debug, Default)]
pub struct MessageAccumulator {}
