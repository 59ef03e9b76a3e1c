//! The bridge and remote domain (AS-1): connection state of the remote-control bridge
//! (a web or IDE client driving this session) and of a remote session this process
//! belongs to.
//!
//! Filled by the bridge and remote-session clients (the binary's `--remote` wiring over
//! `strata-remote`). Not persisted (SP-4): a resumed session reconnects. The sockets
//! themselves are runtime handles.

use std::sync::Arc;

use smol_str::SmolStr;

/// The remote-control bridge: a client elsewhere (web page, IDE) attached to this session.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BridgeState {
    /// The bridge is turned on for this session.
    pub enabled: bool,
    /// It was turned on explicitly (a flag or command) rather than by configuration.
    pub explicit: bool,
    /// Only outbound events are sent; the remote side cannot drive the session.
    pub outbound_only: bool,
    /// The bridge's transport is connected.
    pub connected: bool,
    /// A remote client is attached and active.
    pub session_active: bool,
    /// The transport dropped and is being re-established.
    pub reconnecting: bool,
    /// Where a client can attach.
    pub connect_url: Option<Arc<str>>,
    /// The attached session's page.
    pub session_url: Option<Arc<str>>,
    /// The bridge environment's id.
    pub environment_id: Option<SmolStr>,
    /// The bridge session's id.
    pub session_id: Option<SmolStr>,
    /// The last connection error, for the footer indicator.
    pub error: Option<Arc<str>>,
    /// The session name proposed to the bridge when it connected.
    pub initial_name: Option<Arc<str>>,
}

/// Where the connection to the remote session stands (issue 17: from the NATS client's
/// own events).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum RemoteConnectionStatus {
    /// The first attempt to connect is under way.
    Connecting,
    /// Connected.
    Connected,
    /// The connection dropped; trying again (lines queue meanwhile).
    Reconnecting,
    /// Not connected: no attempt has succeeded yet (still trying in the background), the
    /// client gave up, or this is not a remote session.
    #[default]
    Disconnected,
}

impl RemoteConnectionStatus {
    /// The status as a word (`connecting`, `connected`, `reconnecting`, `disconnected`),
    /// as headless `system/status` lines and the footer say it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Connecting => "connecting",
            Self::Connected => "connected",
            Self::Reconnecting => "reconnecting",
            Self::Disconnected => "disconnected",
        }
    }
}

impl std::fmt::Display for RemoteConnectionStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// This process as part of a remote session.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RemoteState {
    /// The remote session's page, when this process serves one.
    pub session_url: Option<Arc<str>>,
    /// The server(s) this session is replicated on (`--remote` or the settings' `remote`
    /// block); `None`: not a remote session, and the footer shows nothing of it.
    pub server: Option<Arc<str>>,
    /// The connection's status.
    pub connection_status: RemoteConnectionStatus,
    /// Background tasks the remote side reports as running.
    pub background_task_count: u32,
}
