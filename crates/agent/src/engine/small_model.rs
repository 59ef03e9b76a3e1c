//! One request to a small, fast model through the session's provider, for tools that
//! hand part of their work to a model (WebFetch applies its prompt to a page this way,
//! as the reference agent does).
//!
//! The model is `ANTHROPIC_SMALL_FAST_MODEL` when set, else Haiku for the Anthropic
//! provider (the `haiku` alias, which the provider resolves, `ANTHROPIC_DEFAULT_HAIKU_MODEL`
//! included), else the session's own model (an OpenAI-compatible server's small models
//! are not known). The request's cost is counted in the session's totals; nothing is
//! recorded in the transcript (the tool's result is).

use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use strata_bootstrap::ApiDuration;
use strata_protocol::message::{ContentBlock, Message};
use tokio_util::sync::CancellationToken;

use super::BootstrapHandle;
use crate::cost::{boot_usage, response_cost};
use crate::provider::{MessageAccumulator, ModelRequest, Provider, ProviderError};

/// The most tokens a small model answer may take.
const MAX_TOKENS: u32 = 4_096;

/// The model of a small request, when the session's model is `main`.
pub(super) fn small_model(provider: &dyn Provider, main: String) -> String {
    if let Ok(model) = std::env::var("ANTHROPIC_SMALL_FAST_MODEL")
        && !model.trim().is_empty()
    {
        return model.trim().to_owned();
    }
    if provider.name() == "anthropic" {
        "haiku".to_owned()
    } else {
        main
    }
}

/// Asks `model` `prompt` with `system`; the answer's text.
pub(super) async fn ask(
    provider: &dyn Provider,
    bootstrap: &BootstrapHandle,
    model: String,
    system: String,
    prompt: String,
    cancel: CancellationToken,
) -> Result<String, String> {
    let request = ModelRequest {
        model,
        system,
        messages: vec![Arc::new(Message::user_text(prompt))],
        tools: Vec::new(),
        max_tokens: MAX_TOKENS,
        thinking_budget: None,
    };
    let blocks = complete(provider, bootstrap, request, cancel).await?;
    let text: String = blocks.iter().filter_map(ContentBlock::as_text).collect();
    if text.trim().is_empty() {
        return Err("the model's answer was empty".into());
    }
    Ok(text)
}

/// Streams `request` to the end and returns the answer's blocks; its cost is counted.
pub(super) async fn complete(
    provider: &dyn Provider,
    bootstrap: &BootstrapHandle,
    request: ModelRequest,
    cancel: CancellationToken,
) -> Result<Vec<ContentBlock>, String> {
    let started = Instant::now();
    let mut stream = provider.stream(request, cancel.clone());
    let mut acc = MessageAccumulator::new();
    let mut blocks = Vec::new();
    let outcome = loop {
        let event = tokio::select! {
            biased;
            () = cancel.cancelled() => break Err(ProviderError::Cancelled),
            event = stream.next() => event,
        };
        match event {
            None => break Ok(()),
            Some(Err(e)) => break Err(e),
            Some(Ok(event)) => match acc.push(&event) {
                Ok(Some(done)) => blocks.push(done.block),
                Ok(None) => {}
                Err(e) => {
                    break Err(ProviderError::Protocol {
                        provider: provider.name(),
                        message: e.to_string(),
                    });
                }
            },
        }
    };
    if !acc.id().is_empty() {
        let model = acc.model().to_owned();
        let usage = acc.usage().clone();
        bootstrap.add_cost(
            response_cost(&model, &usage),
            &model,
            boot_usage(&usage),
            ApiDuration::single(started.elapsed()),
        );
    }
    match outcome {
        Ok(()) if acc.is_complete() => Ok(blocks),
        Ok(()) => Err("the model's answer ended before it was complete".into()),
        Err(ProviderError::Cancelled) => Err("interrupted".into()),
        Err(e) => Err(e.to_string()),
    }
}
