//! The NATS connection and the session-metadata bucket.
//!
//! One place opens the connection and creates (or binds to) the `strata_sessions` bucket,
//! so the port and the watcher agree on its name and settings.

use async_nats::jetstream::{self, kv};

/// The key-value bucket that holds every session's metadata (key = session id).
pub const BUCKET: &str = "strata_sessions";

/// What went wrong talking to NATS.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// The server could not be reached.
    #[error(
        "cannot connect to the NATS server at {url}: {message} (is nats-server running with JetStream enabled, `nats-server -js`?)"
    )]
    Connect {
        /// The URL that was tried.
        url: String,
        /// The client's error.
        message: String,
    },
    /// A JetStream operation failed.
    #[error("NATS JetStream {operation} failed: {message}")]
    JetStream {
        /// What was being done.
        operation: &'static str,
        /// The client's error.
        message: String,
    },
    /// A stored metadata document is not a JSON object.
    #[error("the remote metadata of session {session} is not a JSON object: {message}")]
    BadDocument {
        /// The session id (the key).
        session: String,
        /// The parse error.
        message: String,
    },
}

impl RemoteError {
    pub(crate) fn js(operation: &'static str, error: impl std::fmt::Display) -> Self {
        Self::JetStream {
            operation,
            message: error.to_string(),
        }
    }
}

/// An open connection to NATS with the session-metadata bucket bound.
#[derive(Clone)]
pub struct RemoteConnection {
    client: async_nats::Client,
    bucket: kv::Store,
}

impl RemoteConnection {
    /// Connects to `url` and creates the bucket, or binds to it when it exists, with
    /// `replicas` copies (1 for a single server, 3 for a three-node cluster).
    pub async fn connect(url: &str, replicas: usize) -> Result<Self, RemoteError> {
        let client = async_nats::connect(url)
            .await
            .map_err(|error| RemoteError::Connect {
                url: url.to_owned(),
                message: error.to_string(),
            })?;
        let js = jetstream::new(client.clone());
        let bucket = match js.get_key_value(BUCKET).await {
            Ok(bucket) => bucket,
            Err(_) => js
                .create_key_value(kv::Config {
                    bucket: BUCKET.to_owned(),
                    history: 1,
                    num_replicas: replicas,
                    ..Default::default()
                })
                .await
                .map_err(|error| RemoteError::js("creating the strata_sessions bucket", error))?,
        };
        Ok(Self { client, bucket })
    }

    /// The session-metadata bucket.
    pub fn bucket(&self) -> &kv::Store {
        &self.bucket
    }

    /// The underlying client.
    pub fn client(&self) -> &async_nats::Client {
        &self.client
    }
}
