package io.kcoord.interop.diff;

import static io.kcoord.interop.diff.Scenario.Pair.ALT;
import static io.kcoord.interop.diff.Scenario.Pair.MAIN;
import static io.kcoord.interop.diff.Scenarios.offsets;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.ConsumerGroupDescribeResponseData;
import org.apache.kafka.common.message.ConsumerGroupHeartbeatRequestData;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.ConsumerGroupDescribeResponse;

/**
 * KIP-848 consumer groups (ConsumerGroupHeartbeat, ConsumerGroupDescribe) and what the other
 * group RPCs do with them. Members are scripted ({@link ConsumerMember}); where the assignor
 * may break ties otherwise than Kafka's, steps are marked ties and compared by counts, with
 * the invariants noted beside them.
 */
final class ConsumerScenarios {
    private ConsumerScenarios() {}

    static List<Scenario> all() {
        List<Scenario> all = new ArrayList<>();
        all.add(new Scenario("consumer-join-v0", MAIN, Map.of("consumer-join-v0-in", 3), ConsumerScenarios::joinV0));
        all.add(new Scenario("consumer-join-v1", MAIN, Map.of("consumer-join-v1-in", 2, "consumer-join-v1-other", 1),
                ConsumerScenarios::joinV1));
        all.add(new Scenario("consumer-uniform-three", MAIN, Map.of("consumer-uniform-three-in", 6),
                ConsumerScenarios::uniformThree));
        all.add(new Scenario("consumer-range-two", MAIN, Map.of("consumer-range-two-a", 3, "consumer-range-two-b", 2),
                ConsumerScenarios::rangeTwo));
        all.add(new Scenario("consumer-static", MAIN, Map.of("consumer-static-in", 2), ConsumerScenarios::staticMembers));
        all.add(new Scenario("consumer-leave", MAIN, Map.of("consumer-leave-in", 2), ConsumerScenarios::leave));
        all.add(new Scenario("consumer-fencing", MAIN, Map.of("consumer-fencing-in", 2), ConsumerScenarios::fencing));
        all.add(new Scenario("consumer-invalid", MAIN, Map.of("consumer-invalid-in", 1), ConsumerScenarios::invalid));
        all.add(new Scenario("consumer-regex", MAIN,
                Map.of("consumer-regex-a", 2, "consumer-regex-b", 1, "consumer-regex-x", 1), ConsumerScenarios::regex));
        all.add(new Scenario("consumer-describe", MAIN, Map.of("consumer-describe-in", 2), ConsumerScenarios::describe));
        all.add(new Scenario("consumer-admin", MAIN, Map.of("consumer-admin-in", 2), ConsumerScenarios::admin));
        all.add(new Scenario("consumer-classic-conversion", MAIN, Map.of("consumer-classic-conversion-in", 2),
                ConsumerScenarios::classicConversion));
        all.add(new Scenario("consumer-session-expiry", ALT, Map.of("consumer-session-expiry-in", 1),
                ConsumerScenarios::sessionExpiry));
        return all;
    }

    /** v0: the coordinator mints the member id; the assignment goes along only when asked for. */
    static void joinV0(Side s) throws Exception {
        String g = "consumer-join-v0";
        s.nameTopics(g + "-in");
        ConsumerMember a = new ConsumerMember(s, g, "").version(0).topics(g + "-in");
        a.join("join v0 without a member id");
        a.heartbeat("heartbeat with the owned partitions");
        a.call("heartbeat with only the epoch", a.lightRequest());
        a.call("full heartbeat", a.fullRequest());
        describe(s, "describe v0", 0, g);
        a.leave("leave v0");
        describe(s, "describe after the leave", 0, g);
    }

    /** v1: the client's own member id; a subscription that shrinks, then empties. */
    static void joinV1(Side s) throws Exception {
        String g = "consumer-join-v1";
        s.nameTopics(g + "-in", g + "-other");
        ConsumerMember a = new ConsumerMember(s, g, "member-a").topics(g + "-in", g + "-other");
        a.rackId = "rack-a";
        a.join("join v1");
        a.heartbeat("ack");
        describe(s, "describe after the join", 1, g);
        a.topics(g + "-in");
        a.call("the subscription shrinks", a.fullRequest());
        a.heartbeat("ack after the shrink");
        a.topics();
        a.call("the subscription empties", a.fullRequest());
        a.heartbeat("ack of nothing");
        describe(s, "describe with an empty subscription", 1, g);
    }

    /** The uniform assignor, three members: a new member gets partitions only once revoked. */
    static void uniformThree(Side s) throws Exception {
        String g = "consumer-uniform-three";
        String t = g + "-in";
        s.nameTopics(t);
        ConsumerMember a = new ConsumerMember(s, g, "member-a").topics(t).ties();
        ConsumerMember b = new ConsumerMember(s, g, "member-b").topics(t).ties();
        ConsumerMember c = new ConsumerMember(s, g, "member-c").topics(t).ties();
        a.join("a joins");
        a.heartbeat("a acks");
        b.join("b joins: nothing until a revokes");
        b.heartbeat("b before a revoked");
        a.heartbeat("a is asked to revoke");
        describeTies(s, "describe while a revokes", g);
        a.heartbeat("a acks the revocation");
        b.heartbeat("b gets its partitions");
        b.heartbeat("b acks");
        c.join("c joins");
        a.heartbeat("a revokes for c");
        b.heartbeat("b revokes for c");
        c.heartbeat("c waits");
        a.heartbeat("a acks for c");
        b.heartbeat("b acks for c");
        c.heartbeat("c gets its partitions");
        c.heartbeat("c acks");
        describeTies(s, "describe stable", g);
        s.note("partition counts", counts(a, b, c));
    }

    /** The range assignor (named by the members), two topics. */
    static void rangeTwo(Side s) throws Exception {
        String g = "consumer-range-two";
        s.nameTopics(g + "-a", g + "-b");
        ConsumerMember a = new ConsumerMember(s, g, "member-a").topics(g + "-a", g + "-b").assignor("range");
        ConsumerMember b = new ConsumerMember(s, g, "member-b").topics(g + "-a", g + "-b").assignor("range");
        a.join("a joins with range");
        a.heartbeat("a acks");
        b.join("b joins");
        a.heartbeat("a is asked to revoke");
        b.heartbeat("b waits for a");
        a.heartbeat("a acks the revocation");
        b.heartbeat("b gets its partitions");
        b.heartbeat("b acks");
        describe(s, "describe", 1, g);
        b.leave("b leaves");
        a.heartbeat("a gets everything back");
        describe(s, "describe after b left", 1, g);
    }

    /** Static members: a temporary leave (-2) keeps the place for the same instance id. */
    static void staticMembers(Side s) throws Exception {
        String g = "consumer-static";
        s.nameTopics(g + "-in");
        ConsumerMember a = new ConsumerMember(s, g, "static-1").topics(g + "-in").instance("instance-a");
        ConsumerMember b = new ConsumerMember(s, g, "static-b").topics(g + "-in").instance("instance-b").ties();
        a.join("a joins with an instance id");
        a.heartbeat("a acks");
        b.join("b joins");
        a.heartbeat("a revokes");
        a.heartbeat("a acks the revocation");
        b.heartbeat("b gets its partition");
        a.leave("a leaves for a while (epoch -2)");
        describeTies(s, "describe after the temporary leave", g);
        ConsumerMember a2 = new ConsumerMember(s, g, "static-2").topics(g + "-in").instance("instance-a");
        a2.join("the instance comes back with a new member id");
        a2.heartbeat("it acks");
        ConsumerMember a3 = new ConsumerMember(s, g, "static-3").topics(g + "-in").instance("instance-a");
        a3.join("another member with the live instance id");
        a.epoch = a2.epoch;
        a.heartbeat("the old member id of the instance");
        a2.instance("instance-b");
        a2.heartbeat("a live member names another member's instance");
        a2.instance("instance-z");
        a2.heartbeat("a live member names an unknown instance");
        a2.instance("instance-a");
        a3.epoch = -2;
        a3.call("a static leave by another member id", a3.leaveRequest());
        describeTies(s, "describe at the end", g);
    }

    /** Leaves (-1): the member is gone at once, the others get its partitions. */
    static void leave(Side s) throws Exception {
        String g = "consumer-leave";
        s.nameTopics(g + "-in");
        ConsumerMember ghost = new ConsumerMember(s, g + "-unknown", "member-x");
        ghost.call("leave an unknown group", ghost.leaveRequest());
        ConsumerMember a = new ConsumerMember(s, g, "member-a").topics(g + "-in");
        ConsumerMember b = new ConsumerMember(s, g, "member-b").topics(g + "-in");
        a.join("a joins");
        a.heartbeat("a acks");
        b.join("b joins");
        a.leave("a leaves");
        a.epoch = 1;
        a.leave("a leaves again");
        b.heartbeat("b gets everything");
        b.heartbeat("b acks");
        describe(s, "describe after a left", 1, g);
        b.leave("b leaves");
        describe(s, "describe empty", 1, g);
        b.join("b rejoins with its old id");
    }

    /** Epoch checks: a newer epoch, the previous epoch with and without owned partitions. */
    static void fencing(Side s) throws Exception {
        String g = "consumer-fencing";
        s.nameTopics(g + "-in");
        ConsumerMember a = new ConsumerMember(s, g, "member-a").topics(g + "-in").ties();
        ConsumerMember b = new ConsumerMember(s, g, "member-b").topics(g + "-in").ties();
        a.join("a joins");
        a.heartbeat("a acks");
        b.join("b joins");
        a.heartbeat("a revokes");
        a.heartbeat("a acks the revocation");
        int epoch = a.epoch;
        a.epoch = epoch - 1;
        a.heartbeat("the previous epoch with owned partitions it still has");
        a.epoch = epoch - 1;
        a.call("the previous epoch without owned partitions", a.lightRequest());
        a.epoch = epoch + 1;
        a.heartbeat("an epoch from the future");
        ConsumerMember ghost = new ConsumerMember(s, g, "member-ghost").topics(g + "-in");
        ghost.epoch = epoch;
        ghost.heartbeat("an unknown member id");
        ConsumerMember lost = new ConsumerMember(s, g + "-unknown", "member-a");
        lost.epoch = 3;
        lost.heartbeat("an unknown group with an epoch");
        a.epoch = 0;
        a.join("the fenced member rejoins with its id");
        a.heartbeat("and acks");
    }

    /** Kafka's INVALID_REQUEST rules and UNSUPPORTED_ASSIGNOR, and groups of other types. */
    static void invalid(Side s) throws Exception {
        String g = "consumer-invalid";
        String t = g + "-in";
        ConsumerMember m = new ConsumerMember(s, g, "member-a").topics(t);
        m.call("v1 join without a member id", m.joinRequest().setMemberId(""));
        m.version(0).call("v0 heartbeat without a member id", m.lightRequest().setMemberId("").setMemberEpoch(1));
        m.version(1).call("leave without a member id", m.leaveRequest().setMemberId(""));
        m.call("an empty group id", m.joinRequest().setGroupId(""));
        m.call("an empty instance id", m.joinRequest().setInstanceId(""));
        m.call("an empty rack id", m.joinRequest().setRackId(""));
        m.call("a join without a rebalance timeout", m.joinRequest().setRebalanceTimeoutMs(-1));
        m.call("a join with owned partitions", m.joinRequest().setTopicPartitions(List.of(
                new ConsumerGroupHeartbeatRequestData.TopicPartitions().setTopicId(Uuid.ONE_UUID).setPartitions(List.of(0)))));
        m.call("a join with null owned partitions", m.joinRequest().setTopicPartitions(null));
        m.call("a join without a subscription", m.joinRequest().setSubscribedTopicNames(null));
        m.call("a static leave without an instance id", m.lightRequest().setMemberEpoch(-2));
        m.call("epoch -3", m.lightRequest().setMemberEpoch(-3));
        m.call("an unknown server assignor", m.joinRequest().setServerAssignor("sticky"));
        m.call("an invalid regular expression", m.joinRequest().setSubscribedTopicNames(null).setSubscribedTopicRegex("["));
        Member streams = new Member(s, g + "-streams", "member-s", Topo.simple(t));
        streams.join("a streams group");
        m.call("a join to a streams group's id", m.joinRequest().setGroupId(g + "-streams"));
        try (ClassicMember c = new ClassicMember(s, g + "-classic", "client-c")) {
            c.join("a classic member asks for an id", (short) 9);
            c.join("a classic member joins", (short) 9);
            m.call("a join to a non-empty classic group", m.joinRequest().setGroupId(g + "-classic"));
        }
        m.call("a heartbeat to an unknown group", m.lightRequest().setGroupId(g + "-none").setMemberEpoch(5));
    }

    /**
     * A regular expression subscription. Kafka resolves it off the request path and bumps the
     * epoch when it lands; kcoord resolves it on the heartbeat (docs/decisions.md): the epochs
     * are projected out, what the member ends up with is compared.
     */
    static void regex(Side s) throws Exception {
        String g = "consumer-regex";
        s.nameTopics(g + "-a", g + "-b", g + "-x");
        ConsumerMember a = new ConsumerMember(s, g, "member-a");
        a.regex = "consumer-regex-[ab]";
        // Kafka answers before the expression is resolved (no partitions yet), kcoord after.
        a.call("join with a regular expression", a.joinRequest(), j -> without(withoutEpochs(j), "assignment"));
        long deadline = System.currentTimeMillis() + 30_000;
        while (a.ownedCount() < 3 || a.last.assignment() == null) {
            if (System.currentTimeMillis() > deadline) throw new AssertionError(s.server + ": the regex never resolved");
            Thread.sleep(200);
            a.quiet(a.heartbeatRequest());
        }
        a.call("heartbeat once resolved", a.heartbeatRequest(), ConsumerScenarios::withoutEpochs);
        s.note("partitions once resolved", JsonNodeFactory.instance.numberNode(a.ownedCount()));
        s.call("describe", Req.consumerDescribe(false, g), (short) 1, ConsumerScenarios::withoutEpochs);
        a.regex = "consumer-regex-x";
        a.call("a new expression", a.fullRequest(), ConsumerScenarios::withoutEpochs);
        deadline = System.currentTimeMillis() + 30_000;
        while (a.ownedCount() != 1) {
            if (System.currentTimeMillis() > deadline) throw new AssertionError(s.server + ": the new regex never resolved");
            Thread.sleep(200);
            a.quiet(a.heartbeatRequest());
        }
        s.call("describe after the new expression", Req.consumerDescribe(false, g), (short) 1,
                ConsumerScenarios::withoutEpochs);
    }

    /** ConsumerGroupDescribe v0 and v1: members, assignments, target, operations, errors. */
    static void describe(Side s) throws Exception {
        String g = "consumer-describe";
        String t = g + "-in";
        s.nameTopics(t);
        ConsumerMember a = new ConsumerMember(s, g, "member-a").topics(t).instance("instance-a").ties();
        a.rackId = "rack-1";
        ConsumerMember b = new ConsumerMember(s, g, "member-b").topics(t).assignor("range").ties();
        a.join("a joins");
        a.heartbeat("a acks");
        b.join("b joins");
        a.heartbeat("a revokes");
        describeTies(s, "describe while reconciling", g);
        s.call("describe v0 while reconciling", Req.consumerDescribe(false, g), (short) 0, "diff-suite", true);
        a.heartbeat("a acks the revocation");
        b.heartbeat("b gets its partition");
        s.call("describe with authorized operations", Req.consumerDescribe(true, g), (short) 1, "diff-suite", true);
        Member streams = new Member(s, g + "-streams", "member-s", Topo.simple(t));
        streams.join("a streams group");
        try (ClassicMember c = new ClassicMember(s, g + "-classic", "client-c")) {
            c.join("a classic member asks for an id", (short) 9);
            c.join("a classic member joins", (short) 9);
            s.call("describe other groups", Req.consumerDescribe(true, g + "-unknown", g + "-streams", g + "-classic", ""),
                    (short) 1);
        }
    }

    /** ListGroups, DescribeGroups, DeleteGroups, OffsetCommit and OffsetFetch on a consumer group. */
    static void admin(Side s) throws Exception {
        String g = "consumer-admin";
        String t = g + "-in";
        s.nameTopics(t);
        ConsumerMember a = new ConsumerMember(s, g, "member-a").topics(t);
        a.join("a joins");
        a.heartbeat("a acks");
        s.call("list consumer groups", Req.listGroups(List.of(), List.of("consumer")), (short) 5,
                j -> Scenarios.onlyGroups(j, g));
        s.call("list stable groups", Req.listGroups(List.of("Stable"), List.of()), (short) 5, j -> Scenarios.onlyGroups(j, g));
        s.call("list v4 (no types)", Req.listGroups(List.of(), List.of()), (short) 4, j -> Scenarios.onlyGroups(j, g));
        s.call("describe groups", Req.describeGroups(g), (short) 5);
        s.call("delete a non-empty group", Req.deleteGroups(g), (short) 2);
        s.call("commit with the member epoch", Req.commit(g, a.memberId, a.epoch, offsets(t, 0, 10, 1, 20)), (short) 9);
        s.call("commit with a newer epoch", Req.commit(g, a.memberId, a.epoch + 1, offsets(t, 0, 11)), (short) 9);
        s.call("commit with an older epoch", Req.commit(g, a.memberId, a.epoch - 1, offsets(t, 0, 12)), (short) 9);
        s.call("commit by an unknown member", Req.commit(g, "ghost", a.epoch, offsets(t, 0, 13)), (short) 9);
        s.call("admin commit to the non-empty group", Req.commit(g, "", -1, offsets(t, 0, 14)), (short) 9);
        s.call("commit v8 with the epoch as generation", Req.commit(g, a.memberId, a.epoch, offsets(t, 1, 21)), (short) 8);
        s.call("fetch as the member", Req.fetch(g, a.memberId, a.epoch, Map.of(t, List.of(0, 1))), (short) 9);
        s.call("fetch with a stale epoch", Req.fetch(g, a.memberId, a.epoch + 1, Map.of(t, List.of(0))), (short) 9);
        s.call("fetch by an unknown member", Req.fetch(g, "ghost", a.epoch, Map.of(t, List.of(0))), (short) 9);
        s.call("offset delete of a subscribed topic", Req.offsetDelete(g, t, 0), (short) 0);
        a.leave("a leaves");
        s.call("describe groups when empty", Req.describeGroups(g), (short) 5);
        s.call("list empty groups", Req.listGroups(List.of("Empty"), List.of("consumer")), (short) 5,
                j -> Scenarios.onlyGroups(j, g));
        s.call("admin commit to the empty group", Req.commit(g, "", -1, offsets(t, 0, 15)), (short) 9);
        s.call("delete", Req.deleteGroups(g), (short) 2);
        s.call("describe after the delete", Req.consumerDescribe(false, g), (short) 1);
        s.call("fetch after the delete", Req.fetch(g, null, -1, Map.of(t, List.of(0, 1))), (short) 9);
    }

    /** An empty classic group becomes a consumer group and back, keeping its offsets. */
    static void classicConversion(Side s) throws Exception {
        String g = "consumer-classic-conversion";
        String t = g + "-in";
        s.nameTopics(t);
        try (ClassicMember c = new ClassicMember(s, g, "client-c")) {
            c.join("classic member asks for an id", (short) 9);
            c.join("classic member joins", (short) 9);
            c.call("classic sync", c.syncRequest(Map.of(c.memberId, "p")), (short) 5);
            s.call("classic commit", Req.commit(g, c.memberId, c.generation, offsets(t, 0, 5, 1, 6)), (short) 9);
            c.call("classic leave", ClassicMember.leave(g, c.identity()), (short) 5);
            ConsumerMember a = new ConsumerMember(s, g, "member-a").topics(t);
            a.join("a consumer member joins the empty classic group");
            s.call("list after the upgrade", Req.listGroups(List.of(), List.of()), (short) 5, j -> Scenarios.onlyGroups(j, g));
            s.call("offsets kept by the upgrade", Req.fetch(g, null, -1, Map.of(t, List.of(0, 1))), (short) 9);
            a.heartbeat("a acks");
            s.call("commit as the consumer member", Req.commit(g, a.memberId, a.epoch, offsets(t, 0, 7)), (short) 9);
            a.leave("a leaves");
            c.memberId = "";
            c.join("a classic member asks for an id of the empty consumer group", (short) 9);
            c.join("the classic member joins", (short) 9);
            s.call("list after the downgrade", Req.listGroups(List.of(), List.of()), (short) 5, j -> Scenarios.onlyGroups(j, g));
            s.call("describe after the downgrade", Req.consumerDescribe(false, g), (short) 1);
            s.call("offsets kept by the downgrade", Req.fetch(g, null, -1, Map.of(t, List.of(0, 1))), (short) 9);
        }
    }

    /** ALT sessions (3 s): a silent member is removed; a static member's place too. */
    static void sessionExpiry(Side s) throws Exception {
        String g = "consumer-session-expiry";
        s.nameTopics(g + "-in");
        ConsumerMember a = new ConsumerMember(s, g, "member-a").topics(g + "-in");
        a.join("a joins");
        a.heartbeat("a acks");
        awaitMembers(s, g, 0);
        describe(s, "describe after the expiry", 1, g);
        a.heartbeat("a heartbeats after the expiry");
        ConsumerMember b = new ConsumerMember(s, g, "member-b").topics(g + "-in").instance("instance-b");
        b.join("static b joins");
        b.leave("b leaves for a while");
        describe(s, "describe while b's place is kept", 1, g);
        awaitMembers(s, g, 0);
        describe(s, "describe once b's session ended", 1, g);
        ConsumerMember b2 = new ConsumerMember(s, g, "member-b2").topics(g + "-in").instance("instance-b");
        b2.join("the instance joins anew");
    }

    // ---------------------------------------------------------------- helpers

    static void describe(Side s, String step, int version, String group) throws Exception {
        s.call(step, Req.consumerDescribe(false, group), (short) version);
    }

    /** ConsumerGroupDescribe where the assignor may pick other partitions, plus its invariants. */
    static void describeTies(Side s, String step, String group) throws Exception {
        AbstractResponse r = s.call(step, Req.consumerDescribe(false, group), (short) 1, "diff-suite", true);
        s.note("invariants of " + step, invariants(((ConsumerGroupDescribeResponse) r).data().groups().get(0)));
    }

    /**
     * No partition owned by two members, none in two members' targets; the number of
     * partitions owned and targeted.
     */
    static JsonNode invariants(ConsumerGroupDescribeResponseData.DescribedGroup g) {
        ObjectNode out = JsonNodeFactory.instance.objectNode();
        ArrayNode problems = out.putArray("problems");
        Map<String, String> owner = new HashMap<>();
        Map<String, String> target = new HashMap<>();
        int owned = 0;
        int targeted = 0;
        for (ConsumerGroupDescribeResponseData.Member m : g.members()) {
            for (ConsumerGroupDescribeResponseData.TopicPartitions tp : m.assignment().topicPartitions()) {
                for (int p : tp.partitions()) {
                    owned++;
                    String prev = owner.put(tp.topicName() + "-" + p, m.memberId());
                    if (prev != null) problems.add(tp.topicName() + "-" + p + " owned by " + prev + " and " + m.memberId());
                }
            }
            for (ConsumerGroupDescribeResponseData.TopicPartitions tp : m.targetAssignment().topicPartitions()) {
                for (int p : tp.partitions()) {
                    targeted++;
                    String prev = target.put(tp.topicName() + "-" + p, m.memberId());
                    if (prev != null) problems.add(tp.topicName() + "-" + p + " targeted at " + prev + " and " + m.memberId());
                }
            }
        }
        out.put("owned", owned);
        out.put("targeted", targeted);
        return out;
    }

    /** The sorted per-member partition counts (which member has more is a tie). */
    static JsonNode counts(ConsumerMember... members) {
        List<Integer> counts = new ArrayList<>();
        for (ConsumerMember m : members) counts.add(m.ownedCount());
        counts.sort(null);
        return Json.MAPPER.valueToTree(counts);
    }

    /** Drops the epochs (member, group, assignment), which the regex resolution moves. */
    static JsonNode withoutEpochs(JsonNode json) {
        JsonNode copy = json.deepCopy();
        strip(copy);
        return copy;
    }

    private static void strip(JsonNode node) {
        if (node instanceof ObjectNode o) {
            o.remove(List.of("memberEpoch", "groupEpoch", "assignmentEpoch"));
            o.forEach(ConsumerScenarios::strip);
        } else if (node instanceof ArrayNode a) {
            a.forEach(ConsumerScenarios::strip);
        }
    }

    private static JsonNode without(JsonNode json, String field) {
        ((ObjectNode) json).remove(field);
        return json;
    }

    /** Polls ConsumerGroupDescribe (unrecorded) until the group has {@code n} members. */
    static void awaitMembers(Side s, String group, int n) throws Exception {
        long deadline = System.currentTimeMillis() + 30_000;
        while (true) {
            AbstractResponse r = s.send(Req.consumerDescribe(false, group), (short) 1, "diff-suite");
            if (r != null) {
                var d = ((ConsumerGroupDescribeResponse) r).data().groups().get(0);
                if (d.errorCode() == 0 && d.members().size() == n) return;
            }
            if (System.currentTimeMillis() > deadline) {
                throw new AssertionError(s.server + ": " + group + " never had " + n + " members");
            }
            Thread.sleep(100);
        }
    }
}
