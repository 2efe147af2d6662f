//! How a plugin operation fails. The daemon maps these to wire errors exactly as KIP-1331 says:
//! `InvalidRequest` -> INVALID_REQUEST, `TooLarge` -> TOPOLOGY_DESCRIPTION_TOO_LARGE, anything
//! else -> TOPOLOGY_DESCRIPTION_UPDATE_FAILED (the message is logged, never sent).

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PluginError {
    /// The payload is semantically invalid (Kafka's `InvalidRequestException`).
    #[error("invalid topology description: {0}")]
    InvalidRequest(String),
    /// The description is larger than the plugin is willing to store
    /// (`TopologyDescriptionTooLargeException`).
    #[error("topology description too large: {0}")]
    TooLarge(String),
    /// Any other failure, e.g. the backing store is unavailable.
    #[error("{0}")]
    Other(String),
}
