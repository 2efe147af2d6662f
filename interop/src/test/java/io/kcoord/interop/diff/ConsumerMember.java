package io.kcoord.interop.diff;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.apache.kafka.common.message.ConsumerGroupHeartbeatRequestData;
import org.apache.kafka.common.message.ConsumerGroupHeartbeatResponseData;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.ConsumerGroupHeartbeatRequest;
import org.apache.kafka.common.requests.ConsumerGroupHeartbeatResponse;

/**
 * A scripted KIP-848 consumer (ConsumerGroupHeartbeat): what Kafka's consumer keeps between
 * heartbeats (its member id and epoch, and the partitions it owns). It gives up revoked
 * partitions at once and reports what it owns in every heartbeat, so a revocation is
 * acknowledged by its next one.
 */
final class ConsumerMember {
    final Side side;
    final String groupId;
    final String clientId;
    String memberId;
    String instanceId;
    String rackId;
    String assignor;
    List<String> topics = new ArrayList<>();
    String regex;
    short version = 1;
    int epoch;
    int rebalanceTimeoutMs = 30_000;
    List<ConsumerGroupHeartbeatRequestData.TopicPartitions> owned = new ArrayList<>();
    ConsumerGroupHeartbeatResponseData last;
    /** The assignor may legitimately give this member other partitions than Kafka's does. */
    boolean ties;

    /** {@code memberId}: the client's own (v1); empty lets a v0 coordinator mint one. */
    ConsumerMember(Side side, String groupId, String memberId) {
        this.side = side;
        this.groupId = groupId;
        this.memberId = memberId;
        this.clientId = "consumer-" + (memberId.isEmpty() ? "v0" : memberId);
    }

    ConsumerMember topics(String... names) {
        this.topics = new ArrayList<>(List.of(names));
        return this;
    }

    ConsumerMember instance(String id) {
        this.instanceId = id;
        return this;
    }

    ConsumerMember assignor(String name) {
        this.assignor = name;
        return this;
    }

    ConsumerMember version(int v) {
        this.version = (short) v;
        return this;
    }

    ConsumerMember ties() {
        this.ties = true;
        return this;
    }

    /** What the consumer sends to (re)join: everything, at epoch 0, owning nothing. */
    ConsumerGroupHeartbeatRequestData joinRequest() {
        return new ConsumerGroupHeartbeatRequestData().setGroupId(groupId).setMemberId(memberId)
                .setMemberEpoch(0).setInstanceId(instanceId).setRackId(rackId)
                .setRebalanceTimeoutMs(rebalanceTimeoutMs)
                .setSubscribedTopicNames(regex == null ? topics : null).setSubscribedTopicRegex(regex)
                .setServerAssignor(assignor).setTopicPartitions(new ArrayList<>());
    }

    /** A heartbeat at the current epoch reporting the owned partitions, nothing else. */
    ConsumerGroupHeartbeatRequestData heartbeatRequest() {
        return new ConsumerGroupHeartbeatRequestData().setGroupId(groupId).setMemberId(memberId)
                .setMemberEpoch(epoch).setInstanceId(instanceId).setTopicPartitions(copy(owned));
    }

    /** The full heartbeat a consumer sends after a lost connection: every field set. */
    ConsumerGroupHeartbeatRequestData fullRequest() {
        return joinRequest().setMemberEpoch(epoch).setTopicPartitions(copy(owned));
    }

    /** Just the epoch: the steady heartbeat of a member with nothing to report. */
    ConsumerGroupHeartbeatRequestData lightRequest() {
        return new ConsumerGroupHeartbeatRequestData().setGroupId(groupId).setMemberId(memberId)
                .setMemberEpoch(epoch);
    }

    /** Epoch -1 (leave), or -2 for a static member (a temporary leave). */
    ConsumerGroupHeartbeatRequestData leaveRequest() {
        return new ConsumerGroupHeartbeatRequestData().setGroupId(groupId).setMemberId(memberId)
                .setMemberEpoch(instanceId == null ? -1 : -2).setInstanceId(instanceId);
    }

    ConsumerGroupHeartbeatResponseData join(String step) throws IOException {
        return call(step, joinRequest());
    }

    ConsumerGroupHeartbeatResponseData heartbeat(String step) throws IOException {
        return call(step, heartbeatRequest());
    }

    ConsumerGroupHeartbeatResponseData leave(String step) throws IOException {
        ConsumerGroupHeartbeatResponseData d = call(step, leaveRequest());
        if (d.errorCode() == 0) owned = new ArrayList<>();
        return d;
    }

    /** Sends {@code data}, records the answer, and keeps what it gives. */
    ConsumerGroupHeartbeatResponseData call(String step, ConsumerGroupHeartbeatRequestData data) throws IOException {
        return call(step, data, Function.identity());
    }

    /** Like {@link #call(String, ConsumerGroupHeartbeatRequestData)}, recording a projection. */
    ConsumerGroupHeartbeatResponseData call(String step, ConsumerGroupHeartbeatRequestData data,
            Function<JsonNode, JsonNode> projection) throws IOException {
        AbstractResponse r = side.send(new ConsumerGroupHeartbeatRequest.Builder(data), version, clientId);
        side.record(step, r, version, ties, projection);
        return keep(r);
    }

    /** Sends without recording (polls); keeps what the answer gives. */
    ConsumerGroupHeartbeatResponseData quiet(ConsumerGroupHeartbeatRequestData data) throws IOException {
        return keep(side.send(new ConsumerGroupHeartbeatRequest.Builder(data), version, clientId));
    }

    private ConsumerGroupHeartbeatResponseData keep(AbstractResponse r) {
        if (r == null) return null;
        ConsumerGroupHeartbeatResponseData d = ((ConsumerGroupHeartbeatResponse) r).data();
        last = d;
        if (d.errorCode() != 0) return d;
        if (d.memberId() != null) memberId = d.memberId();
        epoch = d.memberEpoch();
        if (d.assignment() != null) {
            List<ConsumerGroupHeartbeatRequestData.TopicPartitions> now = new ArrayList<>();
            d.assignment().topicPartitions().forEach(tp -> now.add(new ConsumerGroupHeartbeatRequestData.TopicPartitions()
                    .setTopicId(tp.topicId()).setPartitions(new ArrayList<>(tp.partitions()))));
            owned = now;
        }
        return d;
    }

    /** How many partitions the member owns. */
    int ownedCount() {
        return owned.stream().mapToInt(tp -> tp.partitions().size()).sum();
    }

    private static List<ConsumerGroupHeartbeatRequestData.TopicPartitions> copy(
            List<ConsumerGroupHeartbeatRequestData.TopicPartitions> parts) {
        List<ConsumerGroupHeartbeatRequestData.TopicPartitions> out = new ArrayList<>();
        parts.forEach(tp -> out.add(new ConsumerGroupHeartbeatRequestData.TopicPartitions()
                .setTopicId(tp.topicId()).setPartitions(new ArrayList<>(tp.partitions()))));
        return out;
    }
}
