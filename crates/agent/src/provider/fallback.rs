//! `--fallback-model`: when the model is overloaded or not available, the request is
//! sent once more, to the fallback model.
//!
//! A wrapper around the session's provider rather than a step of the query loop: the
//! decision needs only the first event of a response (an error before any content), and
//! the loop then sees one stream, whichever model answered — the response's own `model`
//! (its `message_start`) says which, so the transcript, usage and cost name the model
//! that really answered. The inner provider has already retried the error by its
//! [`RetryPolicy`](super::RetryPolicy); the fallback is tried once, and its own error is
//! the turn's.

use std::sync::Arc;

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use super::{EventStream, ModelRequest, Provider, ProviderError};

/// A provider that falls back to another model (see the module docs).
#[derive(Debug)]
pub struct FallbackProvider {
    inner: Arc<dyn Provider>,
    fallback: String,
}

impl FallbackProvider {
    /// `inner`, falling back to `fallback` when the requested model is overloaded or
    /// unavailable.
    pub fn new(inner: Arc<dyn Provider>, fallback: impl Into<String>) -> Self {
        Self {
            inner,
            fallback: fallback.into(),
        }
    }
}

/// Whether `error` says the model cannot answer now or at all (overloaded, or not
/// found / not available) rather than that the request is wrong.
pub fn model_unavailable(error: &ProviderError) -> bool {
    match error {
        ProviderError::Api { status, kind, .. } => {
            matches!(
                kind.as_deref(),
                Some("overloaded_error" | "not_found_error")
            ) || matches!(status, Some(404 | 529))
        }
        _ => false,
    }
}

impl Provider for FallbackProvider {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn stream(&self, request: ModelRequest, cancel: CancellationToken) -> EventStream {
        let inner = Arc::clone(&self.inner);
        let fallback = self.fallback.clone();
        let first = async move {
            let mut stream = inner.stream(request.clone(), cancel.clone());
            match stream.next().await {
                Some(Err(e)) if model_unavailable(&e) && request.model != fallback => {
                    tracing::warn!(
                        "model {} is unavailable ({e}); retrying with the fallback model \
                         {fallback} (--fallback-model)",
                        request.model
                    );
                    let retry = ModelRequest {
                        model: fallback,
                        ..request
                    };
                    inner.stream(retry, cancel)
                }
                head => Box::pin(futures::stream::iter(head).chain(stream)) as EventStream,
            }
        };
        Box::pin(futures::stream::once(first).flatten())
    }

    fn api_key_source(&self) -> &'static str {
        self.inner.api_key_source()
    }

    fn default_model(&self) -> Option<&str> {
        self.inner.default_model()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::StreamEvent;
    use std::sync::Mutex;

    /// Answers a model named `busy` with an overload and any other with one event,
    /// recording the models asked for.
    #[derive(Debug, Default)]
    struct Busy(Mutex<Vec<String>>);

    impl Provider for Busy {
        fn name(&self) -> &'static str {
            "busy"
        }
        fn stream(&self, request: ModelRequest, _cancel: CancellationToken) -> EventStream {
            self.0.lock().unwrap().push(request.model.clone());
            let item = if request.model == "busy" {
                Err(ProviderError::Api {
                    provider: "busy",
                    status: Some(529),
                    kind: Some("overloaded_error".into()),
                    message: "Overloaded".into(),
                    retryable: true,
                })
            } else {
                Ok(StreamEvent::MessageStop)
            };
            Box::pin(futures::stream::iter([item]))
        }
    }

    fn request(model: &str) -> ModelRequest {
        ModelRequest {
            model: model.into(),
            system: String::new(),
            messages: Vec::new(),
            tools: Vec::new(),
            max_tokens: 1,
            thinking_budget: None,
        }
    }

    #[tokio::test]
    async fn an_overloaded_model_is_retried_once_on_the_fallback() {
        let busy = Arc::new(Busy::default());
        let provider = FallbackProvider::new(busy.clone(), "calm");
        let events: Vec<_> = provider
            .stream(request("busy"), CancellationToken::new())
            .collect()
            .await;
        assert!(matches!(events.as_slice(), [Ok(StreamEvent::MessageStop)]));
        assert_eq!(*busy.0.lock().unwrap(), ["busy", "calm"]);
    }

    #[tokio::test]
    async fn a_fallback_that_is_overloaded_too_fails_without_a_third_try() {
        let busy = Arc::new(Busy::default());
        let provider = FallbackProvider::new(busy.clone(), "busy");
        let events: Vec<_> = provider
            .stream(request("busy"), CancellationToken::new())
            .collect()
            .await;
        assert!(matches!(
            events.as_slice(),
            [Err(ProviderError::Api { .. })]
        ));
        assert_eq!(busy.0.lock().unwrap().len(), 1);
    }
}
