//! Why a described group does or does not carry a topology description.

use std::fmt;

use super::TopologyDescriptionError;

/// Kafka's `StreamsGroupTopologyDescriptionStatus`; the wire's TopologyDescriptionStatus int8.
/// The description is present if and only if the status is `Available`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TopologyDescriptionStatus {
    /// Wire 0: the request did not set IncludeTopologyDescription (and the v0 default).
    NotRequested,
    /// Wire 1: nothing recorded for the group (no plugin, or no member has pushed yet).
    NotStored,
    /// Wire 2: the coordinator failed to fetch it; the reason is in the coordinator's log.
    Error,
    /// Wire 3: the description is in the response.
    Available,
}

impl TopologyDescriptionStatus {
    /// The wire value.
    pub fn id(self) -> i8 {
        match self {
            TopologyDescriptionStatus::NotRequested => 0,
            TopologyDescriptionStatus::NotStored => 1,
            TopologyDescriptionStatus::Error => 2,
            TopologyDescriptionStatus::Available => 3,
        }
    }

    /// Reads the wire value. Unknown values are an error, as in Kafka's `forId`: a newer
    /// coordinator's status must not be mistaken for one of these.
    pub fn from_id(id: i8) -> Result<Self, TopologyDescriptionError> {
        match id {
            0 => Ok(TopologyDescriptionStatus::NotRequested),
            1 => Ok(TopologyDescriptionStatus::NotStored),
            2 => Ok(TopologyDescriptionStatus::Error),
            3 => Ok(TopologyDescriptionStatus::Available),
            other => Err(TopologyDescriptionError::UnknownStatus(other)),
        }
    }

    /// Kafka's enum constant name.
    pub fn name(self) -> &'static str {
        match self {
            TopologyDescriptionStatus::NotRequested => "NOT_REQUESTED",
            TopologyDescriptionStatus::NotStored => "NOT_STORED",
            TopologyDescriptionStatus::Error => "ERROR",
            TopologyDescriptionStatus::Available => "AVAILABLE",
        }
    }
}

impl fmt::Display for TopologyDescriptionStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_values_round_trip_and_unknown_ones_are_rejected() {
        for status in [
            TopologyDescriptionStatus::NotRequested,
            TopologyDescriptionStatus::NotStored,
            TopologyDescriptionStatus::Error,
            TopologyDescriptionStatus::Available,
        ] {
            assert_eq!(TopologyDescriptionStatus::from_id(status.id()), Ok(status));
        }
        let err = TopologyDescriptionStatus::from_id(4).unwrap_err();
        assert_eq!(err.to_string(), "unknown topology description status 4");
        assert!(TopologyDescriptionStatus::from_id(-1).is_err());
    }
}
