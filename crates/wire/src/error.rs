//! Kafka's error codes (`Errors.java`) plus the codes this project adds (docs/decisions.md).

macro_rules! error_codes {
    ($($name:ident = $code:literal, $text:literal;)*) => {
        /// A Kafka protocol error code. `from_code` maps unknown numbers to `None`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[repr(i16)]
        #[allow(non_camel_case_types)]
        pub enum ErrorCode {
            $($name = $code,)*
        }

        impl ErrorCode {
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$name,)*];

            pub fn code(self) -> i16 {
                self as i16
            }

            pub fn from_code(code: i16) -> Option<ErrorCode> {
                match code {
                    $($code => Some(ErrorCode::$name),)*
                    _ => None,
                }
            }

            /// The constant name Kafka uses, e.g. `UNKNOWN_MEMBER_ID`.
            pub fn name(self) -> &'static str {
                match self {
                    $(ErrorCode::$name => stringify!($name),)*
                }
            }

            /// Kafka's default message for the code.
            pub fn message(self) -> &'static str {
                match self {
                    $(ErrorCode::$name => $text,)*
                }
            }
        }
    };
}

/// Every int16 `ErrorCode` field of a response at any depth, in the versions that carry it:
/// generated for each response schema (`kcoord-codegen`, `error_codes.rs`), so a response is
/// counted by code as Kafka's `AbstractResponse.errorCounts()` counts it for `ErrorsPerSec`.
pub trait ErrorCodes {
    /// Calls `f` with each error code the response carries at `version` (NONE included).
    fn for_each_error_code<F: FnMut(i16)>(&self, version: i16, f: &mut F);
}

error_codes! {
    UNKNOWN_SERVER_ERROR = -1, "The server experienced an unexpected error when processing the request.";
    NONE = 0, "";
    OFFSET_OUT_OF_RANGE = 1, "The requested offset is not within the range of offsets maintained by the server.";
    CORRUPT_MESSAGE = 2, "This message has failed its CRC checksum, exceeds the valid size, has a null key for a compacted topic, or is otherwise corrupt.";
    UNKNOWN_TOPIC_OR_PARTITION = 3, "This server does not host this topic-partition.";
    INVALID_FETCH_SIZE = 4, "The requested fetch size is invalid.";
    LEADER_NOT_AVAILABLE = 5, "There is no leader for this topic-partition as we are in the middle of a leadership election.";
    NOT_LEADER_OR_FOLLOWER = 6, "For requests intended only for the leader, this error indicates that the broker is not the current leader. For requests intended for any replica, this error indicates that the broker is not a replica of the topic partition.";
    REQUEST_TIMED_OUT = 7, "The request timed out.";
    BROKER_NOT_AVAILABLE = 8, "The broker is not available.";
    REPLICA_NOT_AVAILABLE = 9, "The replica is not available for the requested topic-partition. Produce/Fetch requests and other requests intended only for the leader or follower return NOT_LEADER_OR_FOLLOWER if the broker is not a replica of the topic-partition.";
    MESSAGE_TOO_LARGE = 10, "The request included a message larger than the max message size the server will accept.";
    STALE_CONTROLLER_EPOCH = 11, "The controller moved to another broker.";
    OFFSET_METADATA_TOO_LARGE = 12, "The metadata field of the offset request was too large.";
    NETWORK_EXCEPTION = 13, "The server disconnected before a response was received.";
    COORDINATOR_LOAD_IN_PROGRESS = 14, "The coordinator is loading and hence can't process requests.";
    COORDINATOR_NOT_AVAILABLE = 15, "The coordinator is not available.";
    NOT_COORDINATOR = 16, "This is not the correct coordinator.";
    INVALID_TOPIC_EXCEPTION = 17, "The request attempted to perform an operation on an invalid topic.";
    RECORD_LIST_TOO_LARGE = 18, "The request included message batch larger than the configured segment size on the server.";
    NOT_ENOUGH_REPLICAS = 19, "Messages are rejected since there are fewer in-sync replicas than required.";
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20, "Messages are written to the log, but to fewer in-sync replicas than required.";
    INVALID_REQUIRED_ACKS = 21, "Produce request specified an invalid value for required acks.";
    ILLEGAL_GENERATION = 22, "Specified group generation id is not valid.";
    INCONSISTENT_GROUP_PROTOCOL = 23, "The group member's supported protocols are incompatible with those of existing members or first group member tried to join with empty protocol type or empty protocol list.";
    INVALID_GROUP_ID = 24, "The group id is invalid.";
    UNKNOWN_MEMBER_ID = 25, "The coordinator is not aware of this member.";
    INVALID_SESSION_TIMEOUT = 26, "The session timeout is not within the range allowed by the broker (as configured by group.min.session.timeout.ms and group.max.session.timeout.ms).";
    REBALANCE_IN_PROGRESS = 27, "The group is rebalancing, so a rejoin is needed.";
    INVALID_COMMIT_OFFSET_SIZE = 28, "The committing offset data size is not valid.";
    TOPIC_AUTHORIZATION_FAILED = 29, "Topic authorization failed.";
    GROUP_AUTHORIZATION_FAILED = 30, "Group authorization failed.";
    CLUSTER_AUTHORIZATION_FAILED = 31, "Cluster authorization failed.";
    INVALID_TIMESTAMP = 32, "The timestamp of the message is out of acceptable range.";
    UNSUPPORTED_SASL_MECHANISM = 33, "The broker does not support the requested SASL mechanism.";
    ILLEGAL_SASL_STATE = 34, "Request is not valid given the current SASL state.";
    UNSUPPORTED_VERSION = 35, "The version of API is not supported.";
    TOPIC_ALREADY_EXISTS = 36, "Topic with this name already exists.";
    INVALID_PARTITIONS = 37, "Number of partitions is below 1.";
    INVALID_REPLICATION_FACTOR = 38, "Replication factor is below 1 or larger than the number of available brokers.";
    INVALID_REPLICA_ASSIGNMENT = 39, "Replica assignment is invalid.";
    INVALID_CONFIG = 40, "Configuration is invalid.";
    NOT_CONTROLLER = 41, "This is not the correct controller for this cluster.";
    INVALID_REQUEST = 42, "This most likely occurs because of a request being malformed by the client library or the message was sent to an incompatible broker. See the broker logs for more details.";
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43, "The message format version on the broker does not support the request.";
    POLICY_VIOLATION = 44, "Request parameters do not satisfy the configured policy.";
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45, "The broker received an out of order sequence number.";
    DUPLICATE_SEQUENCE_NUMBER = 46, "The broker received a duplicate sequence number.";
    INVALID_PRODUCER_EPOCH = 47, "Producer attempted to produce with an old epoch.";
    INVALID_TXN_STATE = 48, "The producer attempted a transactional operation in an invalid state.";
    INVALID_PRODUCER_ID_MAPPING = 49, "The producer attempted to use a producer id which is not currently assigned to its transactional id.";
    INVALID_TRANSACTION_TIMEOUT = 50, "The transaction timeout is larger than the maximum value allowed by the broker (as configured by transaction.max.timeout.ms).";
    CONCURRENT_TRANSACTIONS = 51, "The producer attempted to update a transaction while another concurrent operation on the same transaction was ongoing.";
    TRANSACTION_COORDINATOR_FENCED = 52, "Indicates that the transaction coordinator sending a WriteTxnMarker is no longer the current coordinator for a given producer.";
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53, "Transactional Id authorization failed.";
    SECURITY_DISABLED = 54, "Security features are disabled.";
    OPERATION_NOT_ATTEMPTED = 55, "The broker did not attempt to execute this operation. This may happen for batched RPCs where some operations in the batch failed, causing the broker to respond without trying the rest.";
    KAFKA_STORAGE_ERROR = 56, "Disk error when trying to access log file on the disk.";
    SASL_AUTHENTICATION_FAILED = 58, "SASL Authentication failed.";
    UNKNOWN_PRODUCER_ID = 59, "This exception is raised by the broker if it could not locate the producer metadata associated with the producerId in question.";
    NON_EMPTY_GROUP = 68, "The group is not empty.";
    GROUP_ID_NOT_FOUND = 69, "The group id does not exist.";
    FETCH_SESSION_ID_NOT_FOUND = 70, "The fetch session ID was not found.";
    INVALID_FETCH_SESSION_EPOCH = 71, "The fetch session epoch is invalid.";
    FENCED_LEADER_EPOCH = 74, "The leader epoch in the request is older than the epoch on the broker.";
    UNKNOWN_LEADER_EPOCH = 75, "The leader epoch in the request is newer than the epoch on the broker.";
    UNSUPPORTED_COMPRESSION_TYPE = 76, "The requesting client does not support the compression type of given partition.";
    STALE_BROKER_EPOCH = 77, "Broker epoch has changed.";
    MEMBER_ID_REQUIRED = 79, "The group member needs to have a valid member id before actually entering a consumer group.";
    GROUP_MAX_SIZE_REACHED = 81, "The consumer group has reached its max size.";
    FENCED_INSTANCE_ID = 82, "The broker rejected this static consumer since another consumer with the same group.instance.id has registered with a different member.id.";
    GROUP_SUBSCRIBED_TO_TOPIC = 86, "Deleting offsets of a topic is forbidden while the consumer group is actively subscribed to it.";
    INVALID_RECORD = 87, "This record has failed the validation on broker and hence will be rejected.";
    UNSTABLE_OFFSET_COMMIT = 88, "There are unstable offsets that need to be cleared.";
    THROTTLING_QUOTA_EXCEEDED = 89, "The throttling quota has been exceeded.";
    PRODUCER_FENCED = 90, "There is a newer producer with the same transactionalId which fences the current one.";
    RESOURCE_NOT_FOUND = 91, "A request illegally referred to a resource that does not exist.";
    DUPLICATE_RESOURCE = 92, "A request illegally referred to the same resource twice.";
    UNACCEPTABLE_CREDENTIAL = 93, "Requested credential would not meet criteria for acceptability.";
    UNKNOWN_TOPIC_ID = 100, "This server does not host this topic ID.";
    DUPLICATE_BROKER_REGISTRATION = 101, "This broker ID is already in use.";
    BROKER_ID_NOT_REGISTERED = 102, "The given broker ID was not registered.";
    INCONSISTENT_TOPIC_ID = 103, "The log's topic ID did not match the topic ID in the request.";
    INCONSISTENT_CLUSTER_ID = 104, "The clusterId in the request does not match that found on the server.";
    TRANSACTIONAL_ID_NOT_FOUND = 105, "The transactionalId could not be found.";
    FETCH_SESSION_TOPIC_ID_ERROR = 106, "The fetch session encountered inconsistent topic ID usage.";
    FEATURE_UPDATE_FAILED = 96, "Unable to update finalized features due to an unexpected server error.";
    FENCED_MEMBER_EPOCH = 110, "The member epoch is fenced by the group coordinator. The member must abandon all its partitions and rejoin.";
    UNRELEASED_INSTANCE_ID = 111, "The instance ID is still used by another member in the consumer group. That member must leave first.";
    UNSUPPORTED_ASSIGNOR = 112, "The assignor or its version range is not supported by the consumer group.";
    STALE_MEMBER_EPOCH = 113, "The member epoch is stale. The member must retry after receiving its updated member epoch via the ConsumerGroupHeartbeat API.";
    MISMATCHED_ENDPOINT_TYPE = 114, "The request was sent to an endpoint of the wrong type.";
    UNSUPPORTED_ENDPOINT_TYPE = 115, "This endpoint type is not supported yet.";
    UNKNOWN_CONTROLLER_ID = 116, "This controller ID is not known.";
    INVALID_REGISTRATION = 119, "The controller has considered the broker registration to be invalid.";
    TRANSACTION_ABORTABLE = 120, "The server encountered an error with the transaction. The client can abort the transaction to continue using this transactional ID.";
    INVALID_REGULAR_EXPRESSION = 128, "The regular expression is not valid.";
    REBOOTSTRAP_REQUIRED = 129, "Client metadata is stale. The client should rebootstrap to obtain new metadata.";
    STREAMS_INVALID_TOPOLOGY = 130, "The supplied topology is invalid.";
    STREAMS_INVALID_TOPOLOGY_EPOCH = 131, "The supplied topology epoch is invalid.";
    STREAMS_TOPOLOGY_FENCED = 132, "The supplied topology epoch is outdated.";
    SHARE_SESSION_LIMIT_REACHED = 133, "The limit of share sessions has been reached.";
    GROUP_DELETION_FAILED = 134, "The group could not be deleted.";
    TOPOLOGY_DESCRIPTION_UPDATE_FAILED = 135, "The broker could not process the topology description update; see the error message for details.";
    CONTROLLER_ID_NOT_REGISTERED = 136, "The given controller ID was not registered.";
    TOPOLOGY_DESCRIPTION_TOO_LARGE = 137, "The topology description is larger than the topology description plugin is willing to store.";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for e in ErrorCode::ALL {
            assert!(seen.insert(e.code()), "duplicate code {}", e.code());
            assert_eq!(ErrorCode::from_code(e.code()), Some(*e));
        }
        assert_eq!(ErrorCode::from_code(-2), None);
    }

    #[test]
    fn project_codes_follow_wire_decisions() {
        assert_eq!(ErrorCode::GROUP_DELETION_FAILED.code(), 134);
        assert_eq!(ErrorCode::TOPOLOGY_DESCRIPTION_UPDATE_FAILED.code(), 135);
        assert_eq!(ErrorCode::TOPOLOGY_DESCRIPTION_TOO_LARGE.code(), 137);
        assert_eq!(
            ErrorCode::UNKNOWN_MEMBER_ID.message(),
            "The coordinator is not aware of this member."
        );
    }
}
