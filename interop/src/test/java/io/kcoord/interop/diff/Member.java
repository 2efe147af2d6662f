package io.kcoord.interop.diff;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.Predicate;
import org.apache.kafka.common.message.StreamsGroupHeartbeatRequestData;
import org.apache.kafka.common.message.StreamsGroupHeartbeatResponseData;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.StreamsGroupHeartbeatRequest;
import org.apache.kafka.common.requests.StreamsGroupHeartbeatResponse;

/**
 * A scripted streams group member: what a Kafka Streams client keeps between heartbeats (its
 * epoch and the tasks it was last given, which it reports as owned at once).
 */
final class Member {
    final Side side;
    final String groupId;
    final String memberId;
    String instanceId;
    String processId;
    StreamsGroupHeartbeatRequestData.Topology topology;
    short version = 1;
    int epoch;
    List<StreamsGroupHeartbeatRequestData.TaskIds> active = new ArrayList<>();
    List<StreamsGroupHeartbeatRequestData.TaskIds> standby = new ArrayList<>();
    List<StreamsGroupHeartbeatRequestData.TaskIds> warmup = new ArrayList<>();
    StreamsGroupHeartbeatResponseData last;
    /** Assignment lists in the heartbeat may legitimately differ between the servers. */
    boolean ties;

    Member(Side side, String groupId, String memberId, StreamsGroupHeartbeatRequestData.Topology topology) {
        this.side = side;
        this.groupId = groupId;
        this.memberId = memberId;
        this.processId = "process-" + memberId;
        this.topology = topology;
    }

    Member instance(String instanceId) {
        this.instanceId = instanceId;
        return this;
    }

    Member ties() {
        this.ties = true;
        return this;
    }

    /** The full heartbeat a member sends at its current epoch (the join one at epoch 0). */
    StreamsGroupHeartbeatRequestData request() {
        StreamsGroupHeartbeatRequestData data = new StreamsGroupHeartbeatRequestData()
                .setGroupId(groupId)
                .setMemberId(memberId)
                .setMemberEpoch(epoch)
                .setInstanceId(instanceId)
                .setProcessId(processId)
                .setEndpointInformationEpoch(0);
        if (epoch == 0) {
            data.setRebalanceTimeoutMs(30_000)
                    .setTopology(topology)
                    .setActiveTasks(new ArrayList<>())
                    .setStandbyTasks(new ArrayList<>())
                    .setWarmupTasks(new ArrayList<>());
        } else {
            data.setActiveTasks(copy(active)).setStandbyTasks(copy(standby)).setWarmupTasks(copy(warmup));
        }
        return data;
    }

    private static List<StreamsGroupHeartbeatRequestData.TaskIds> copy(List<StreamsGroupHeartbeatRequestData.TaskIds> in) {
        List<StreamsGroupHeartbeatRequestData.TaskIds> out = new ArrayList<>();
        for (StreamsGroupHeartbeatRequestData.TaskIds t : in) {
            out.add(new StreamsGroupHeartbeatRequestData.TaskIds().setSubtopologyId(t.subtopologyId())
                    .setPartitions(new ArrayList<>(t.partitions())));
        }
        return out;
    }

    /** Joins (epoch 0) or heartbeats at the current epoch, owning what it was given. */
    StreamsGroupHeartbeatResponseData hb(String step) throws IOException {
        return send(step, request());
    }

    /** Sends a heartbeat built from the member's state, changed by {@code edit}. */
    StreamsGroupHeartbeatResponseData hb(String step, Consumer<StreamsGroupHeartbeatRequestData> edit) throws IOException {
        StreamsGroupHeartbeatRequestData data = request();
        edit.accept(data);
        return send(step, data);
    }

    StreamsGroupHeartbeatResponseData join(String step) throws IOException {
        epoch = 0;
        active = new ArrayList<>();
        standby = new ArrayList<>();
        warmup = new ArrayList<>();
        return hb(step);
    }

    /** Leaves: epoch -1, or -2 for a static member that will come back. */
    StreamsGroupHeartbeatResponseData leave(String step, int leaveEpoch) throws IOException {
        StreamsGroupHeartbeatRequestData data = new StreamsGroupHeartbeatRequestData()
                .setGroupId(groupId).setMemberId(memberId).setMemberEpoch(leaveEpoch)
                .setInstanceId(instanceId).setEndpointInformationEpoch(0);
        return send(step, data);
    }

    /** Heartbeats every 100 ms until {@code done}; records the last answer only. */
    StreamsGroupHeartbeatResponseData pollUntil(String step, Predicate<StreamsGroupHeartbeatResponseData> done,
            long maxMs) throws IOException, InterruptedException {
        AbstractResponse r = side.poll(step, () -> new StreamsGroupHeartbeatRequest.Builder(request()),
                version, memberId, ties, resp -> {
                    StreamsGroupHeartbeatResponseData d = ((StreamsGroupHeartbeatResponse) resp).data();
                    absorb(d);
                    return done.test(d);
                }, maxMs);
        return ((StreamsGroupHeartbeatResponse) r).data();
    }

    /** Heartbeats until the member owns what its target says and nothing is pending. */
    StreamsGroupHeartbeatResponseData settle(String step) throws IOException, InterruptedException {
        int[] quiet = {0};
        return pollUntil(step, d -> {
            boolean changed = d.activeTasks() != null || d.standbyTasks() != null || d.warmupTasks() != null;
            quiet[0] = changed ? 0 : quiet[0] + 1;
            return d.errorCode() == 0 && quiet[0] >= 1 && !hasStatus(d, StreamsGroupHeartbeatResponse.Status.MISSING_INTERNAL_TOPICS);
        }, 20_000);
    }

    /** An unrecorded heartbeat (settling), absorbed like any answer. */
    StreamsGroupHeartbeatResponseData quiet() throws IOException {
        AbstractResponse r = side.send(new StreamsGroupHeartbeatRequest.Builder(request()), version, memberId);
        if (r == null) return null;
        StreamsGroupHeartbeatResponseData d = ((StreamsGroupHeartbeatResponse) r).data();
        absorb(d);
        return d;
    }

    /**
     * Heartbeats every member, round after round (100 ms apart, unrecorded), until a round in
     * which nobody is given anything new and no internal topic is missing; then records one
     * heartbeat of each as "{@code step} {@code memberId}". The number of rounds is not compared.
     */
    static void settleAll(String step, Member... members) throws IOException, InterruptedException {
        long deadline = System.currentTimeMillis() + 20_000;
        while (true) {
            boolean quiet = true;
            for (Member m : members) {
                StreamsGroupHeartbeatResponseData d = m.quiet();
                if (d == null || d.errorCode() != 0 || d.activeTasks() != null || d.standbyTasks() != null
                        || d.warmupTasks() != null
                        || hasStatus(d, StreamsGroupHeartbeatResponse.Status.MISSING_INTERNAL_TOPICS)
                        || hasStatus(d, StreamsGroupHeartbeatResponse.Status.ASSIGNMENT_DELAYED)) {
                    quiet = false;
                }
            }
            if (quiet) break;
            if (System.currentTimeMillis() > deadline) {
                throw new AssertionError(members[0].side.server + ": group " + members[0].groupId + " did not settle");
            }
            Thread.sleep(100);
        }
        for (Member m : members) m.hb(step + " " + m.memberId);
    }

    static boolean hasStatus(StreamsGroupHeartbeatResponseData d, StreamsGroupHeartbeatResponse.Status status) {
        return d.status() != null && d.status().stream().anyMatch(s -> s.statusCode() == status.code());
    }

    StreamsGroupHeartbeatResponseData send(String step, StreamsGroupHeartbeatRequestData data) throws IOException {
        AbstractResponse r = side.call(step, new StreamsGroupHeartbeatRequest.Builder(data), version, memberId, ties);
        if (r == null) return null;
        StreamsGroupHeartbeatResponseData d = ((StreamsGroupHeartbeatResponse) r).data();
        absorb(d);
        return d;
    }

    /** What a client does with an answer: take the epoch and the new assignment. */
    void absorb(StreamsGroupHeartbeatResponseData d) {
        last = d;
        if (d.errorCode() != Errors.NONE.code()) return;
        epoch = d.memberEpoch();
        if (d.activeTasks() != null) active = fromResponse(d.activeTasks());
        if (d.standbyTasks() != null) standby = fromResponse(d.standbyTasks());
        if (d.warmupTasks() != null) warmup = fromResponse(d.warmupTasks());
    }

    private static List<StreamsGroupHeartbeatRequestData.TaskIds> fromResponse(
            List<StreamsGroupHeartbeatResponseData.TaskIds> tasks) {
        List<StreamsGroupHeartbeatRequestData.TaskIds> out = new ArrayList<>();
        for (StreamsGroupHeartbeatResponseData.TaskIds t : tasks) {
            out.add(new StreamsGroupHeartbeatRequestData.TaskIds().setSubtopologyId(t.subtopologyId())
                    .setPartitions(new ArrayList<>(t.partitions())));
        }
        return out;
    }
}
