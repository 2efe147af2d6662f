package io.kcoord.interop.diff;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.message.HeartbeatRequestData;
import org.apache.kafka.common.message.JoinGroupRequestData;
import org.apache.kafka.common.message.JoinGroupResponseData;
import org.apache.kafka.common.message.LeaveGroupRequestData;
import org.apache.kafka.common.message.SyncGroupRequestData;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.HeartbeatRequest;
import org.apache.kafka.common.requests.JoinGroupRequest;
import org.apache.kafka.common.requests.JoinGroupResponse;
import org.apache.kafka.common.requests.LeaveGroupRequest;
import org.apache.kafka.common.requests.SyncGroupRequest;

/**
 * A scripted classic group member on its own connection (a parked JoinGroup or SyncGroup
 * blocks only it): what a consumer keeps between requests (its member id and generation).
 */
final class ClassicMember implements AutoCloseable {
    final Side side;
    final String groupId;
    final String clientId;
    String instanceId;
    String memberId = "";
    int generation = -1;
    String protocol = "range";
    String metadata = "subscription";
    /** Metadata as bytes (a real {@code ConsumerProtocolSubscription}); wins over {@link #metadata}. */
    byte[] rawMetadata;
    int sessionTimeoutMs = 45_000;
    int rebalanceTimeoutMs = 30_000;
    private final WireClient wire;

    ClassicMember(Side side, String groupId, String clientId) {
        this.side = side;
        this.groupId = groupId;
        this.clientId = clientId;
        this.wire = new WireClient(side.bootstrap, clientId);
    }

    ClassicMember instance(String instanceId) {
        this.instanceId = instanceId;
        return this;
    }

    AbstractRequest.Builder<?> joinRequest() {
        JoinGroupRequestData.JoinGroupRequestProtocolCollection protocols =
                new JoinGroupRequestData.JoinGroupRequestProtocolCollection();
        protocols.add(new JoinGroupRequestData.JoinGroupRequestProtocol().setName(protocol)
                .setMetadata(rawMetadata != null ? rawMetadata : metadata.getBytes(StandardCharsets.UTF_8)));
        return new JoinGroupRequest.Builder(new JoinGroupRequestData().setGroupId(groupId)
                .setMemberId(memberId).setGroupInstanceId(instanceId).setProtocolType("consumer")
                .setSessionTimeoutMs(sessionTimeoutMs).setRebalanceTimeoutMs(rebalanceTimeoutMs)
                .setProtocols(protocols));
    }

    /** A JoinGroup as if from member {@code id}. */
    AbstractRequest.Builder<?> joinRequestAs(String id) {
        String mine = memberId;
        memberId = id;
        AbstractRequest.Builder<?> request = joinRequest();
        memberId = mine;
        return request;
    }

    /** Sends on this member's connection without recording. */
    AbstractResponse send(AbstractRequest.Builder<?> request, short version) throws IOException {
        return wire.send(request, version, clientId);
    }

    /** Sends and records. */
    AbstractResponse call(String step, AbstractRequest.Builder<?> request, short version) throws IOException {
        AbstractResponse r = send(request, version);
        side.record(step, r, version, false, java.util.function.Function.identity());
        return r;
    }

    /** A JoinGroup, remembering the id and generation it gives. */
    JoinGroupResponseData join(String step, short version) throws IOException {
        return keep(call(step, joinRequest(), version));
    }

    JoinGroupResponseData keep(AbstractResponse r) {
        JoinGroupResponseData d = ((JoinGroupResponse) r).data();
        if (!d.memberId().isEmpty()) memberId = d.memberId();
        if (d.errorCode() == 0) generation = d.generationId();
        return d;
    }

    /** The first JoinGroup (MEMBER_ID_REQUIRED on v4+, recorded), then the real one started. */
    CompletableFuture<AbstractResponse> joinAsync(String firstStep, short version) throws IOException {
        if (firstStep != null) join(firstStep, version);
        AbstractRequest.Builder<?> request = joinRequest();
        return CompletableFuture.supplyAsync(() -> {
            try {
                return send(request, version);
            } catch (IOException e) {
                return null;
            }
        });
    }

    /** Waits for a parked request's answer and records it. */
    AbstractResponse await(String step, CompletableFuture<AbstractResponse> pending, short version) throws Exception {
        AbstractResponse r = pending.get(60, TimeUnit.SECONDS);
        side.record(step, r, version, false, java.util.function.Function.identity());
        return r;
    }

    AbstractRequest.Builder<?> syncRequest(Map<String, String> assignments) {
        List<SyncGroupRequestData.SyncGroupRequestAssignment> list = new ArrayList<>();
        assignments.forEach((m, a) -> list.add(new SyncGroupRequestData.SyncGroupRequestAssignment()
                .setMemberId(m).setAssignment(a.getBytes(StandardCharsets.UTF_8))));
        return new SyncGroupRequest.Builder(new SyncGroupRequestData().setGroupId(groupId)
                .setMemberId(memberId).setGroupInstanceId(instanceId).setGenerationId(generation)
                .setProtocolType("consumer").setProtocolName(protocol).setAssignments(list));
    }

    /** A SyncGroup whose assignments are bytes (real {@code ConsumerProtocolAssignment}s). */
    AbstractRequest.Builder<?> syncRequestRaw(Map<String, byte[]> assignments) {
        List<SyncGroupRequestData.SyncGroupRequestAssignment> list = new ArrayList<>();
        assignments.forEach((m, a) -> list.add(new SyncGroupRequestData.SyncGroupRequestAssignment()
                .setMemberId(m).setAssignment(a)));
        return new SyncGroupRequest.Builder(new SyncGroupRequestData().setGroupId(groupId)
                .setMemberId(memberId).setGroupInstanceId(instanceId).setGenerationId(generation)
                .setProtocolType("consumer").setProtocolName(protocol).setAssignments(list));
    }

    CompletableFuture<AbstractResponse> syncAsync(Map<String, String> assignments, short version) {
        AbstractRequest.Builder<?> request = syncRequest(assignments);
        return CompletableFuture.supplyAsync(() -> {
            try {
                return send(request, version);
            } catch (IOException e) {
                return null;
            }
        });
    }

    AbstractRequest.Builder<?> heartbeatRequest() {
        return new HeartbeatRequest.Builder(new HeartbeatRequestData().setGroupId(groupId)
                .setMemberId(memberId).setGroupInstanceId(instanceId).setGenerationId(generation));
    }

    AbstractResponse heartbeat(String step) throws IOException {
        return call(step, heartbeatRequest(), (short) 4);
    }

    static AbstractRequest.Builder<?> leave(String group, LeaveGroupRequestData.MemberIdentity... members) {
        return new LeaveGroupRequest.Builder(group, List.of(members));
    }

    LeaveGroupRequestData.MemberIdentity identity() {
        return new LeaveGroupRequestData.MemberIdentity().setMemberId(memberId).setGroupInstanceId(instanceId);
    }

    @Override
    public void close() {
        wire.close();
    }
}
