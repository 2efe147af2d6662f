package io.kcoord.interop.diff;

import static io.kcoord.interop.diff.Scenario.Pair.ALT;
import static io.kcoord.interop.diff.Scenario.Pair.MAIN;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.common.message.StreamsGroupDescribeResponseData;
import org.apache.kafka.common.message.StreamsGroupHeartbeatResponseData;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.StreamsGroupDescribeResponse;
import org.apache.kafka.common.requests.StreamsGroupHeartbeatResponse.Status;

/**
 * The group-membership scenarios (heartbeat, rebalances, topology, describe, list, delete, the
 * topology push). Each uses its own group and topic names, prefixed with the scenario's name.
 * {@link OffsetScenarios} has the offset ones.
 */
final class Scenarios {
    private Scenarios() {}

    static List<Scenario> all() {
        List<Scenario> all = new ArrayList<>();
        all.add(new Scenario("api-versions", MAIN, Map.of(), Scenarios::apiVersions));
        all.add(new Scenario("find-coordinator", MAIN, Map.of(), Scenarios::findCoordinator));
        all.add(new Scenario("join-single", MAIN, Map.of("join-single-in", 4), Scenarios::joinSingle));
        all.add(new Scenario("join-v0", MAIN, Map.of("join-v0-in", 2), Scenarios::joinV0));
        all.add(new Scenario("three-members", MAIN, Map.of("three-members-in", 6), Scenarios::threeMembers));
        all.add(new Scenario("leave", MAIN, Map.of("leave-in", 4), Scenarios::leave));
        all.add(new Scenario("static-leave-rejoin", MAIN, Map.of("static-leave-rejoin-in", 4), Scenarios::staticLeaveRejoin));
        all.add(new Scenario("static-rejoin-no-leave", MAIN, Map.of("static-rejoin-no-leave-in", 2), Scenarios::staticRejoinNoLeave));
        all.add(new Scenario("fenced-epochs", MAIN, Map.of("fenced-epochs-in", 4), Scenarios::fencedEpochs));
        all.add(new Scenario("lost-response", MAIN, Map.of("lost-response-in", 4), Scenarios::lostResponse));
        all.add(new Scenario("unknown-member-group", MAIN, Map.of("unknown-member-group-in", 1), Scenarios::unknownMemberAndGroup));
        all.add(new Scenario("invalid-heartbeats", MAIN, Map.of("invalid-heartbeats-in", 2), Scenarios::invalidHeartbeats));
        all.add(new Scenario("invalid-tasks", MAIN, Map.of("invalid-tasks-in", 2), Scenarios::invalidTasks));
        all.add(new Scenario("missing-source-topics", MAIN, Map.of(), Scenarios::missingSourceTopics));
        all.add(new Scenario("internal-topics", MAIN, Map.of("internal-topics-in", 3), Scenarios::internalTopics));
        all.add(new Scenario("copartition-mismatch", MAIN,
                Map.of("copartition-mismatch-a", 2, "copartition-mismatch-b", 3), Scenarios::copartitionMismatch));
        all.add(new Scenario("copartition-repartition", MAIN,
                Map.of("copartition-repartition-a", 2, "copartition-repartition-b", 5), Scenarios::copartitionRepartition));
        all.add(new Scenario("topology-mismatch", MAIN, Map.of("topology-mismatch-in", 2, "topology-mismatch-other", 2),
                Scenarios::topologyMismatch));
        all.add(new Scenario("describe", MAIN, Map.of("describe-in", 2), Scenarios::describe));
        all.add(new Scenario("list-groups", MAIN, Map.of("list-groups-in", 2), Scenarios::listGroups));
        all.add(new Scenario("delete-groups", MAIN, Map.of("delete-groups-in", 2), Scenarios::deleteGroups));
        all.add(new Scenario("describe-groups-classic", MAIN, Map.of("describe-groups-classic-in", 1), Scenarios::describeGroupsClassic));
        all.add(new Scenario("push-stored", MAIN, Map.of("push-stored-in", 2), Scenarios::pushStored));
        all.add(new Scenario("push-rejected", MAIN, Map.of("push-rejected-in", 2), Scenarios::pushRejected));
        all.add(new Scenario("shutdown-application", MAIN, Map.of("shutdown-application-in", 2), Scenarios::shutdownApplication));
        all.add(new Scenario("user-endpoints", MAIN, Map.of("user-endpoints-in", 4), Scenarios::userEndpoints));
        all.addAll(OffsetScenarios.all());
        all.addAll(TransactionScenarios.all());
        all.addAll(ClassicScenarios.all());
        all.addAll(ConsumerScenarios.all());
        all.addAll(MigrationScenarios.all());
        all.addAll(TopicToolScenarios.all());
        all.add(new Scenario("initial-delay", ALT, Map.of("initial-delay-in", 2), Scenarios::initialDelay));
        all.add(new Scenario("standby-three-members", ALT, Map.of("standby-three-members-in", 3), Scenarios::standbyThree));
        all.add(new Scenario("session-expiry", ALT, Map.of("session-expiry-in", 4), Scenarios::sessionExpiry));
        all.add(new Scenario("no-plugin-push", ALT, Map.of("no-plugin-push-in", 1), Scenarios::noPluginPush));
        all.addAll(SecurityScenarios.all());
        all.addAll(QuotaScenarios.all());
        return all;
    }

    // ---------------------------------------------------------------- helpers

    /** API keys whose versions the suite compares (the group ones and what they use, the ACL, quota and SCRAM ones). */
    static final Set<Integer> KEYS = Set.of(3, 8, 9, 10, 11, 12, 13, 14, 15, 16, 18, 19, 29, 30, 31, 33, 35, 37, 42, 44, 47, 48, 49, 50, 51, 68, 69, 88, 89, 93);

    /** StreamsGroupDescribe where the assignor may pick other members, plus its invariants. */
    static StreamsGroupDescribeResponseData describeTies(Side s, String step, int version, String group) throws Exception {
        AbstractResponse r = s.call(step, Req.describe(version >= 1, group), (short) version, "diff-suite", true);
        StreamsGroupDescribeResponseData d = ((StreamsGroupDescribeResponse) r).data();
        s.note("invariants of " + step, invariants(d.groups().get(0)));
        return d;
    }

    /** Every task active at most once, never standby where it is active, per member count of tasks. */
    static JsonNode invariants(StreamsGroupDescribeResponseData.DescribedGroup g) {
        ObjectNode out = JsonNodeFactory.instance.objectNode();
        Map<String, String> activeOwner = new HashMap<>();
        ArrayNode problems = out.putArray("problems");
        int active = 0;
        int standby = 0;
        for (StreamsGroupDescribeResponseData.Member m : g.members()) {
            for (StreamsGroupDescribeResponseData.TaskIds t : m.assignment().activeTasks()) {
                for (int p : t.partitions()) {
                    active++;
                    String prev = activeOwner.put(t.subtopologyId() + "_" + p, m.memberId());
                    if (prev != null) problems.add("task " + t.subtopologyId() + "_" + p + " active on " + prev + " and " + m.memberId());
                }
            }
        }
        for (StreamsGroupDescribeResponseData.Member m : g.members()) {
            for (StreamsGroupDescribeResponseData.TaskIds t : m.assignment().standbyTasks()) {
                for (int p : t.partitions()) {
                    standby++;
                    if (m.memberId().equals(activeOwner.get(t.subtopologyId() + "_" + p))) {
                        problems.add("task " + t.subtopologyId() + "_" + p + " active and standby on " + m.memberId());
                    }
                }
            }
        }
        out.put("activeTasks", active);
        out.put("standbyTasks", standby);
        return out;
    }

    /** Keeps only this scenario's groups in a ListGroups answer (the server has the others too). */
    static JsonNode onlyGroups(JsonNode json, String prefix) {
        ObjectNode o = (ObjectNode) json;
        ArrayNode kept = JsonNodeFactory.instance.arrayNode();
        for (JsonNode g : json.get("groups")) if (g.get("groupId").asText().startsWith(prefix)) kept.add(g);
        o.set("groups", kept);
        return o;
    }

    // ---------------------------------------------------------------- scenarios

    static void apiVersions(Side s) throws Exception {
        for (short v : new short[] {3, 4}) {
            AbstractResponse r = s.send(Req.apiVersions(), v, "diff-suite");
            s.record("ApiVersions v" + v, r, v, false, json -> {
                ObjectNode o = (ObjectNode) json;
                ArrayNode keys = o.putArray("apiKeysCompared");
                for (JsonNode k : json.get("apiKeys")) if (KEYS.contains(k.get("apiKey").asInt())) keys.add(k);
                o.remove("apiKeys");
                return o;
            });
        }
    }

    static void findCoordinator(Side s) throws Exception {
        s.call("FindCoordinator v3", new org.apache.kafka.common.requests.FindCoordinatorRequest.Builder(
                new org.apache.kafka.common.message.FindCoordinatorRequestData().setKey("find-coordinator").setKeyType((byte) 0)),
                (short) 3);
        s.call("FindCoordinator v6", Req.findCoordinator("find-coordinator", "find-coordinator-2"), (short) 6);
    }

    static void joinSingle(Side s) throws Exception {
        String g = "join-single";
        Member a = new Member(s, g, "member-a", Topo.simple("join-single-in"));
        a.join("join");
        a.hb("ack assignment");
        a.hb("steady");
        s.call("describe v0", Req.describe(false, g), (short) 0);
        s.call("describe v1", Req.describe(true, g), (short) 1);
    }

    static void joinV0(Side s) throws Exception {
        Member a = new Member(s, "join-v0", "member-a", Topo.simple("join-v0-in"));
        a.version = 0;
        a.join("join v0");
        a.hb("ack v0");
        a.leave("leave v0", -1);
    }

    static void threeMembers(Side s) throws Exception {
        String g = "three-members";
        Member a = new Member(s, g, "member-a", Topo.simple("three-members-in")).ties();
        Member b = new Member(s, g, "member-b", Topo.simple("three-members-in")).ties();
        Member c = new Member(s, g, "member-c", Topo.simple("three-members-in")).ties();
        a.join("a joins");
        a.hb("a acks");
        b.join("b joins");
        a.hb("a told to revoke");
        a.hb("a revoked");
        b.hb("b gets freed tasks");
        c.join("c joins");
        a.hb("a after c joined");
        b.hb("b after c joined");
        c.hb("c after a and b");
        Member.settleAll("settled", a, b, c);
        describeTies(s, "describe", 0, g);
    }

    static void leave(Side s) throws Exception {
        String g = "leave";
        Member a = new Member(s, g, "member-a", Topo.simple("leave-in")).ties();
        Member b = new Member(s, g, "member-b", Topo.simple("leave-in")).ties();
        a.join("a joins");
        b.join("b joins");
        Member.settleAll("settled", a, b);
        b.leave("b leaves (-1)", -1);
        a.hb("a gets b's tasks");
        a.hb("a acks");
        describeTies(s, "describe after leave", 0, g);
        b.hb("b heartbeats after leaving");
        a.leave("a leaves (-1)", -1);
        s.call("describe empty", Req.describe(false, g), (short) 0);
    }

    static void staticLeaveRejoin(Side s) throws Exception {
        String g = "static-leave-rejoin";
        Member a = new Member(s, g, "member-a", Topo.simple("static-leave-rejoin-in")).instance("instance-a").ties();
        Member b = new Member(s, g, "member-b", Topo.simple("static-leave-rejoin-in")).instance("instance-b").ties();
        a.join("a joins");
        b.join("b joins");
        Member.settleAll("settled", a, b);
        b.leave("b leaves (-2)", -2);
        describeTies(s, "describe while b is away", 0, g);
        a.hb("a while b is away");
        Member b2 = new Member(s, g, "member-b2", Topo.simple("static-leave-rejoin-in")).instance("instance-b").ties();
        b2.join("b rejoins with a new member id");
        b2.hb("b2 acks");
        a.hb("a after b rejoined");
        describeTies(s, "describe after rejoin", 0, g);
        b2.leave("b2 leaves (-2)", -2);
        Member b3 = new Member(s, g, "member-b2", Topo.simple("static-leave-rejoin-in")).instance("instance-b").ties();
        b3.join("b rejoins with the same member id after -2");
    }

    static void staticRejoinNoLeave(Side s) throws Exception {
        String g = "static-rejoin-no-leave";
        Member a = new Member(s, g, "member-a", Topo.simple("static-rejoin-no-leave-in")).instance("instance-a");
        a.join("a joins");
        a.hb("a acks");
        a.join("a rejoins at epoch 0 with its own member id");
        Member other = new Member(s, g, "member-x", Topo.simple("static-rejoin-no-leave-in")).instance("instance-a");
        other.join("another member id takes the instance id");
        s.call("describe", Req.describe(false, g), (short) 0);
    }

    static void fencedEpochs(Side s) throws Exception {
        String g = "fenced-epochs";
        Member a = new Member(s, g, "member-a", Topo.simple("fenced-epochs-in"));
        a.join("join");
        a.hb("ack");
        Member b = new Member(s, g, "member-b", Topo.simple("fenced-epochs-in")).ties();
        b.join("b joins");
        a.ties = true;
        Member.settleAll("settled", a, b);
        b.leave("b leaves", -1);
        Member.settleAll("settled after b left", a);
        a.ties = false;
        int epoch = a.epoch;
        a.hb("epoch ahead", d -> d.setMemberEpoch(epoch + 5));
        a.hb("epoch two behind", d -> d.setMemberEpoch(epoch - 2));
        a.hb("current epoch after fencing", d -> d.setMemberEpoch(epoch));
        a.join("rejoin after fencing");
        a.hb("ack after rejoin");
    }

    static void lostResponse(Side s) throws Exception {
        String g = "lost-response";
        Member a = new Member(s, g, "member-a", Topo.simple("lost-response-in")).ties();
        Member b = new Member(s, g, "member-b", Topo.simple("lost-response-in")).ties();
        a.join("a joins");
        b.join("b joins");
        Member.settleAll("settled", a, b);
        int previous = a.epoch;
        var owned = a.request().activeTasks();
        b.leave("b leaves", -1);
        a.hb("a gets b's tasks (response lost)");
        // The answer with the bumped epoch was lost: a repeats at the previous epoch, owning a subset.
        a.hb("a repeats at the previous epoch", d -> d.setMemberEpoch(previous).setActiveTasks(owned));
        a.hb("a repeats at the previous epoch without task lists", d -> d.setMemberEpoch(previous)
                .setActiveTasks(null).setStandbyTasks(null).setWarmupTasks(null));
        a.join("a rejoins");
        a.hb("a acks");
        a.hb("a at the previous epoch owning a task it does not have", d -> d.setMemberEpoch(a.epoch - 1)
                .setActiveTasks(List.of(new org.apache.kafka.common.message.StreamsGroupHeartbeatRequestData.TaskIds()
                        .setSubtopologyId("0").setPartitions(List.of(0, 1, 2, 3, 9)))));
    }

    static void unknownMemberAndGroup(Side s) throws Exception {
        String g = "unknown-member-group";
        Member a = new Member(s, g, "member-a", Topo.simple("unknown-member-group-in"));
        a.join("join");
        Member ghost = new Member(s, g, "member-ghost", Topo.simple("unknown-member-group-in"));
        ghost.epoch = 3;
        ghost.hb("unknown member at epoch 3");
        ghost.leave("unknown member leaves", -1);
        Member nowhere = new Member(s, "unknown-member-group-nowhere", "member-a", Topo.simple("unknown-member-group-in"));
        nowhere.epoch = 1;
        nowhere.hb("unknown group at epoch 1");
        nowhere.leave("unknown group leave", -1);
    }

    static void invalidHeartbeats(Side s) throws Exception {
        String g = "invalid-heartbeats";
        int n = 0; // each invalid join goes to its own group, so one accepted by mistake changes nothing else
        fresh(s, g, ++n).hb("empty member id", d -> d.setMemberId(""));
        fresh(s, g, ++n).hb("blank member id", d -> d.setMemberId("  "));
        fresh(s, g, ++n).hb("empty group id", d -> d.setGroupId(""));
        fresh(s, g, ++n).hb("empty instance id", d -> d.setInstanceId(""));
        fresh(s, g, ++n).hb("empty rack id", d -> d.setRackId(""));
        fresh(s, g, ++n).hb("epoch -3", d -> d.setMemberEpoch(-3));
        fresh(s, g, ++n).hb("join without rebalance timeout", d -> d.setRebalanceTimeoutMs(-1));
        fresh(s, g, ++n).hb("join without topology", d -> d.setTopology(null));
        fresh(s, g, ++n).hb("join with null task lists", d -> d.setActiveTasks(null).setStandbyTasks(null).setWarmupTasks(null));
        fresh(s, g, ++n).hb("join with one null task list", d -> d.setStandbyTasks(null));
        fresh(s, g, ++n).hb("join owning tasks", d -> d.setActiveTasks(List.of(
                new org.apache.kafka.common.message.StreamsGroupHeartbeatRequestData.TaskIds().setSubtopologyId("0")
                        .setPartitions(List.of(0)))));
        fresh(s, g, ++n).hb("join with a source topic regex", d -> d.topology().subtopologies().get(0).setSourceTopicRegex(List.of("x.*")));
        fresh(s, g, ++n).hb("static leave without instance id", d -> d.setMemberEpoch(-2).setTopology(null));
        Member a = new Member(s, g, "member-a", Topo.simple("invalid-heartbeats-in"));
        a.join("valid join");
        a.hb("topology after joining", d -> d.setTopology(Topo.simple("invalid-heartbeats-in")));
        a.hb("changelog with a partition count", d -> d.setMemberEpoch(0).setTopology(Topo.epoch(0)
                .sub("0", List.of("invalid-heartbeats-in")).build()).topology().subtopologies().get(0)
                .setStateChangelogTopics(List.of(new org.apache.kafka.common.message.StreamsGroupHeartbeatRequestData.TopicInfo()
                        .setName("invalid-heartbeats-cl").setPartitions(3))));
    }

    /** A new member that has not joined (each invalid join starts from scratch). */
    private static Member fresh(Side s, String g, int n) {
        return new Member(s, g + "-" + n, "member-a", Topo.simple("invalid-heartbeats-in"));
    }

    static void invalidTasks(Side s) throws Exception {
        String g = "invalid-tasks";
        Member a = new Member(s, g, "member-a", Topo.simple("invalid-tasks-in"));
        a.join("join");
        a.hb("ack");
        a.hb("owning a task of an unknown subtopology", d -> d.setActiveTasks(List.of(
                new org.apache.kafka.common.message.StreamsGroupHeartbeatRequestData.TaskIds().setSubtopologyId("7")
                        .setPartitions(List.of(0)))));
        a.hb("owning a partition out of range", d -> d.setStandbyTasks(List.of(
                new org.apache.kafka.common.message.StreamsGroupHeartbeatRequestData.TaskIds().setSubtopologyId("0")
                        .setPartitions(List.of(5)))));
        a.hb("still a member");
    }

    static void missingSourceTopics(Side s) throws Exception {
        String g = "missing-source-topics";
        Member a = new Member(s, g, "member-a", Topo.simple("missing-source-topics-in"));
        a.join("join without the source topic");
        a.hb("heartbeat without the source topic");
        s.call("describe while topics are missing", Req.describe(false, g), (short) 0);
        s.call("create the source topic", Req.createTopics(Map.of("missing-source-topics-in", 3)), (short) 7);
        a.pollUntil("assignment once the topic exists",
                d -> d.errorCode() == 0 && d.activeTasks() != null && !d.activeTasks().isEmpty(), 15_000);
        a.hb("ack");
    }

    static void internalTopics(Side s) throws Exception {
        String g = "internal-topics";
        var topo = Topo.epoch(0)
                .sub("0", List.of("internal-topics-in")).repartitionSink("internal-topics-rp").changelog("internal-topics-st1-changelog")
                .sub("1", List.of()).repartitionSource("internal-topics-rp", 0).changelog("internal-topics-st2-changelog")
                .build();
        Member a = new Member(s, g, "member-a", topo);
        a.join("join creates internal topics");
        a.pollUntil("assignment once the internal topics exist", d -> d.errorCode() == 0
                && !Member.hasStatus(d, Status.MISSING_INTERNAL_TOPICS) && a.active.size() == 2, 20_000);
        a.hb("ack");
        s.call("metadata of the internal topics", Req.metadata("internal-topics-rp",
                "internal-topics-st1-changelog", "internal-topics-st2-changelog"), (short) 12);
        s.call("describe", Req.describe(false, g), (short) 0);
    }

    static void copartitionMismatch(Side s) throws Exception {
        String g = "copartition-mismatch";
        var topo = Topo.epoch(0).sub("0", List.of("copartition-mismatch-a", "copartition-mismatch-b"))
                .copartition(List.of((short) 0, (short) 1), List.of()).build();
        Member a = new Member(s, g, "member-a", topo);
        a.join("join with differently partitioned copartitioned sources");
        a.hb("heartbeat");
        s.call("describe", Req.describe(false, g), (short) 0);
    }

    static void copartitionRepartition(Side s) throws Exception {
        String g = "copartition-repartition";
        var topo = Topo.epoch(0)
                .sub("0", List.of("copartition-repartition-a")).repartitionSink("copartition-repartition-rp")
                .sub("1", List.of("copartition-repartition-b")).repartitionSource("copartition-repartition-rp", 0)
                .copartition(List.of((short) 0), List.of((short) 0))
                .build();
        Member a = new Member(s, g, "member-a", topo);
        a.join("join");
        a.pollUntil("assignment once the repartition topic exists", d -> d.errorCode() == 0
                && !Member.hasStatus(d, Status.MISSING_INTERNAL_TOPICS) && a.active.size() == 2, 20_000);
        s.call("metadata of the repartition topic", Req.metadata("copartition-repartition-rp"), (short) 12);
        s.call("describe", Req.describe(false, g), (short) 0);
    }

    static void topologyMismatch(Side s) throws Exception {
        String g = "topology-mismatch";
        Member a = new Member(s, g, "member-a", Topo.epoch(1).sub("0", List.of("topology-mismatch-in", "topology-mismatch-other")).build());
        a.join("a joins at topology epoch 1");
        a.hb("a acks");
        Member b = new Member(s, g, "member-b", Topo.epoch(1).sub("0", List.of("topology-mismatch-other")).build());
        b.join("b joins with another topology at the same epoch");
        Member c = new Member(s, g, "member-c", Topo.epoch(0).sub("0", List.of("topology-mismatch-other")).build());
        c.join("c joins with an older topology epoch");
        c.hb("c heartbeats at the older epoch");
        Member d = new Member(s, g, "member-d", Topo.epoch(1).sub("0", List.of("topology-mismatch-in", "topology-mismatch-other"))
                .sub("1", List.of("topology-mismatch-other")).build());
        d.join("d joins with an extra subtopology at the same epoch");
        Member e = new Member(s, g, "member-e", Topo.epoch(1).sub("0", List.of("topology-mismatch-other", "topology-mismatch-in")).build());
        e.join("e joins with the source topics in another order");
        Member f = new Member(s, g, "member-f", Topo.epoch(2).sub("0", List.of("topology-mismatch-in")).build());
        f.join("f joins with a higher topology epoch");
        a.hb("a after f");
        s.call("describe", Req.describe(false, g), (short) 0);
    }

    static void describe(Side s) throws Exception {
        String g = "describe";
        s.call("describe unknown group v0", Req.describe(false, "describe-unknown"), (short) 0);
        s.call("describe unknown group v1", Req.describe(true, "describe-unknown"), (short) 1);
        s.call("describe empty group id", Req.describe(false, ""), (short) 0);
        Member a = new Member(s, g, "member-a", Topo.simple("describe-in"));
        a.join("join");
        a.hb("ack");
        s.call("describe v0", Req.describe(false, g), (short) 0);
        s.call("describe v1 without topology", Req.describe(false, g), (short) 1);
        s.call("describe v1 with topology before a push", Req.describe(true, g), (short) 1);
        s.call("describe several groups", Req.describe(true, g, "describe-unknown"), (short) 1);
    }

    static void listGroups(Side s) throws Exception {
        String p = "list-groups";
        Member a = new Member(s, p + "-stable", "member-a", Topo.simple("list-groups-in"));
        a.join("stable group joins");
        a.hb("stable group acks");
        Member e = new Member(s, p + "-empty", "member-a", Topo.simple("list-groups-in"));
        e.join("empty group joins");
        e.leave("empty group's member leaves", -1);
        Member r = new Member(s, p + "-assigning", "member-a", Topo.simple("list-groups-in"));
        Member r2 = new Member(s, p + "-assigning", "member-b", Topo.simple("list-groups-in"));
        r.join("assigning group a joins");
        r.hb("assigning group a acks");
        r2.join("assigning group b joins");
        Member n = new Member(s, p + "-not-ready", "member-a", Topo.simple("list-groups-missing"));
        n.join("not-ready group joins");
        String[][] filters = {{}, {"Stable"}, {"Empty"}, {"Reconciling"}, {"NotReady"}, {"stable", "EMPTY"}};
        for (String[] states : filters) {
            for (String[] types : new String[][] {{}, {"streams"}, {"consumer"}, {"Streams"}}) {
                short v = 5;
                AbstractResponse resp = s.send(Req.listGroups(List.of(states), List.of(types)), v, "diff-suite");
                s.record("ListGroups v5 states=" + List.of(states) + " types=" + List.of(types), resp, v, false,
                        json -> onlyGroups(json, p));
            }
        }
        for (short v : new short[] {3, 4}) {
            List<String> states = v >= 4 ? List.of("Empty") : List.of();
            AbstractResponse resp = s.send(Req.listGroups(states, List.of()), v, "diff-suite");
            s.record("ListGroups v" + v, resp, v, false, json -> onlyGroups(json, p));
        }
    }

    static void deleteGroups(Side s) throws Exception {
        String g = "delete-groups";
        Member a = new Member(s, g, "member-a", Topo.simple("delete-groups-in"));
        a.join("join");
        a.hb("ack");
        s.call("commit", Req.commit(g, "member-a", a.epoch, Map.of("delete-groups-in", Map.of(0, 5L))), (short) 9);
        s.call("delete a non-empty group", Req.deleteGroups(g), (short) 2);
        s.call("delete an unknown group", Req.deleteGroups("delete-groups-unknown"), (short) 2);
        s.call("delete empty and unknown ids", Req.deleteGroups("", "delete-groups-unknown"), (short) 2);
        a.leave("leave", -1);
        s.call("delete the now empty group", Req.deleteGroups(g), (short) 2);
        s.call("describe after delete", Req.describe(false, g), (short) 0);
        s.call("offsets after delete", Req.fetch(g, null, -1, Map.of("delete-groups-in", List.of(0))), (short) 9);
        s.call("delete again", Req.deleteGroups(g), (short) 2);
        Member b = new Member(s, g, "member-b", Topo.simple("delete-groups-in"));
        b.join("a new group of the same name");
    }

    static void describeGroupsClassic(Side s) throws Exception {
        String g = "describe-groups-classic";
        Member a = new Member(s, g, "member-a", Topo.simple("describe-groups-classic-in"));
        a.join("join");
        for (short v : new short[] {5, 6}) {
            s.call("DescribeGroups v" + v + " of a streams group", Req.describeGroups(g, "describe-groups-classic-unknown"), v);
        }
        s.call("OffsetFetch v1 of a streams group", org.apache.kafka.common.requests.OffsetFetchRequest.Builder.forTopicNames(
                new org.apache.kafka.common.message.OffsetFetchRequestData().setGroupId(g).setTopics(List.of(
                        new org.apache.kafka.common.message.OffsetFetchRequestData.OffsetFetchRequestTopic()
                                .setName("describe-groups-classic-in").setPartitionIndexes(List.of(0)))), false), (short) 1);
    }

    static void pushStored(Side s) throws Exception {
        String g = "push-stored";
        Member a = new Member(s, g, "member-a", Topo.simple("push-stored-in"));
        StreamsGroupHeartbeatResponseData join = a.join("join asks for the description");
        a.hb("next heartbeat");
        s.call("push", Req.push(g, "member-a", 0, "push-stored-in", "push-stored-out"), (short) 0);
        a.hb("heartbeat after the push");
        s.call("describe v1 with the description", Req.describe(true, g), (short) 1);
        s.call("describe v0 after the push", Req.describe(false, g), (short) 0);
        s.call("push again", Req.push(g, "member-a", 0, "push-stored-in", "push-stored-other"), (short) 0);
        s.call("describe v1 after the second push", Req.describe(true, g), (short) 1);
        a.leave("leave", -1);
        s.call("delete", Req.deleteGroups(g), (short) 2);
        Member b = new Member(s, g, "member-b", Topo.simple("push-stored-in"));
        b.join("a new group of the same name asks again");
        s.call("describe v1 of the new group", Req.describe(true, g), (short) 1);
        if (join == null) throw new AssertionError("no answer to the join");
    }

    static void pushRejected(Side s) throws Exception {
        String g = "push-rejected";
        Member a = new Member(s, g, "member-a", Topo.simple("push-rejected-in"));
        a.join("join");
        s.call("push at a wrong topology epoch", Req.push(g, "member-a", 7, "push-rejected-in", "out"), (short) 0);
        s.call("push by an unknown member", Req.push(g, "member-zz", 0, "push-rejected-in", "out"), (short) 0);
        s.call("push to an unknown group", Req.push("push-rejected-unknown", "member-a", 0, "push-rejected-in", "out"), (short) 0);
        s.call("push with an empty member id", Req.push(g, "", 0, "push-rejected-in", "out"), (short) 0);
        s.call("push with an empty group id", Req.push("", "member-a", 0, "push-rejected-in", "out"), (short) 0);
        s.call("describe v1 after rejected pushes", Req.describe(true, g), (short) 1);
        a.hb("heartbeat after rejected pushes");
    }

    static void shutdownApplication(Side s) throws Exception {
        String g = "shutdown-application";
        Member a = new Member(s, g, "member-a", Topo.simple("shutdown-application-in")).ties();
        Member b = new Member(s, g, "member-b", Topo.simple("shutdown-application-in")).ties();
        a.join("a joins");
        b.join("b joins");
        Member.settleAll("settled", a, b);
        a.hb("a requests shutdown", d -> d.setShutdownApplication(true));
        b.hb("b is told");
        a.leave("a leaves", -1);
        b.hb("b after a left");
    }

    static void userEndpoints(Side s) throws Exception {
        String g = "user-endpoints";
        Member a = new Member(s, g, "member-a", Topo.simple("user-endpoints-in")).ties();
        Member b = new Member(s, g, "member-b", Topo.simple("user-endpoints-in")).ties();
        var ea = new org.apache.kafka.common.message.StreamsGroupHeartbeatRequestData.Endpoint().setHost("host-a").setPort(8080);
        var eb = new org.apache.kafka.common.message.StreamsGroupHeartbeatRequestData.Endpoint().setHost("host-b").setPort(8081);
        a.hb("a joins with an endpoint", d -> d.setUserEndpoint(ea));
        a.hb("a acks", d -> d.setEndpointInformationEpoch(a.last.endpointInformationEpoch()));
        b.hb("b joins with an endpoint", d -> d.setUserEndpoint(eb));
        Member.settleAll("settled", a, b);
        a.hb("a at endpoint epoch 0", d -> d.setEndpointInformationEpoch(0));
        b.hb("b at the current endpoint epoch", d -> d.setEndpointInformationEpoch(b.last.endpointInformationEpoch()));
        describeTies(s, "describe", 0, g);
    }

    static void initialDelay(Side s) throws Exception {
        String g = "initial-delay";
        Member a = new Member(s, g, "member-a", Topo.simple("initial-delay-in")).ties();
        Member b = new Member(s, g, "member-b", Topo.simple("initial-delay-in")).ties();
        a.join("join during delay");
        b.join("second join during delay");
        a.hb("heartbeat during delay");
        s.call("describe during delay", Req.describe(false, g), (short) 0);
        a.pollUntil("a's assignment after the delay", d -> d.errorCode() == 0 && a.active.size() > 0, 10_000);
        b.pollUntil("b's assignment after the delay", d -> d.errorCode() == 0 && b.active.size() > 0, 10_000);
        Member c = new Member(s, g, "member-c", Topo.simple("initial-delay-in")).ties();
        c.join("join after the delay");
        describeTies(s, "describe after the delay", 0, g);
    }

    static void standbyThree(Side s) throws Exception {
        String g = "standby-three-members";
        var topo = Topo.epoch(0).sub("0", List.of("standby-three-members-in")).changelog("standby-three-members-store-changelog").build();
        Member a = new Member(s, g, "member-a", topo).ties();
        Member b = new Member(s, g, "member-b", topo).ties();
        Member c = new Member(s, g, "member-c", topo).ties();
        a.join("a joins");
        a.pollUntil("a once the changelog topic exists", d -> d.errorCode() == 0
                && !Member.hasStatus(d, Status.MISSING_INTERNAL_TOPICS) && !Member.hasStatus(d, Status.ASSIGNMENT_DELAYED), 20_000);
        b.join("b joins");
        c.join("c joins");
        Member.settleAll("settled", a, b, c);
        describeTies(s, "describe with standbys", 0, g);
        c.leave("c leaves", -1);
        Member.settleAll("settled after c left", a, b);
        describeTies(s, "describe after c left", 0, g);
    }

    static void sessionExpiry(Side s) throws Exception {
        String g = "session-expiry";
        Member a = new Member(s, g, "member-a", Topo.simple("session-expiry-in")).ties();
        Member b = new Member(s, g, "member-b", Topo.simple("session-expiry-in")).ties();
        a.join("a joins");
        b.join("b joins");
        Member.settleAll("settled", a, b);
        // b goes silent; a keeps heartbeating until b's session (4 s) expired and a has all tasks.
        a.pollUntil("a gets b's tasks after b's session expired", d -> d.errorCode() == 0 && a.active.stream()
                .mapToInt(t -> t.partitions().size()).sum() == 4, 15_000);
        a.hb("a acks");
        s.call("describe after expiry", Req.describe(false, g), (short) 0);
        b.hb("b heartbeats after expiry");
        b.join("b rejoins");
    }

    static void noPluginPush(Side s) throws Exception {
        String g = "no-plugin-push";
        Member a = new Member(s, g, "member-a", Topo.simple("no-plugin-push-in"));
        a.pollUntil("join without a plugin", d -> d.errorCode() == 0 && a.active.size() > 0, 10_000);
        s.call("push without a plugin", Req.push(g, "member-a", 0, "no-plugin-push-in", "out"), (short) 0);
        s.call("describe v1 without a plugin", Req.describe(true, g), (short) 1);
        AbstractResponse r = s.send(Req.apiVersions(), (short) 3, "diff-suite");
        s.record("ApiVersions without a plugin", r, (short) 3, false, json -> {
            ObjectNode o = JsonNodeFactory.instance.objectNode();
            ArrayNode keys = o.putArray("apiKeysCompared");
            for (JsonNode k : json.get("apiKeys")) if (Set.of(88, 89, 93).contains(k.get("apiKey").asInt())) keys.add(k);
            return o;
        });
    }

    static Map<String, Map<Integer, Long>> offsets(String topic, Object... partitionOffset) {
        Map<Integer, Long> m = new LinkedHashMap<>();
        for (int i = 0; i < partitionOffset.length; i += 2) {
            m.put((Integer) partitionOffset[i], ((Number) partitionOffset[i + 1]).longValue());
        }
        return Map.of(topic, m);
    }
}
