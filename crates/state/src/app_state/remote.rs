//! The bridge and remote domain (AS-1): connection state of the remote-control bridge
//! (a web or IDE client driving this session) and of a remote session this process
//! belongs to.
//!
//! Filled by the bridge and remote-session clients (the agent crate). Not persisted
//! (SP-4): a resumed session reconnects. The sockets themselves are runtime handles.

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

/// Where the connection to the remote session stands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum RemoteConnectionStatus {
    /// Opening the connection.
    Connecting,
    /// Connected.
    Connected,
    /// The connection dropped; trying again.
    Reconnecting,
    /// Not connected (also: not a remote session).
    #[default]
    Disconnected,
}

/// This process as part of a remote session.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RemoteState {
    /// The remote session's page, when this process serves one.
    pub session_url: Option<Arc<str>>,
    /// The connection's status.
    pub connection_status: RemoteConnectionStatus,
    /// Background tasks the remote side reports as running.
    pub background_task_count: u32,
}
