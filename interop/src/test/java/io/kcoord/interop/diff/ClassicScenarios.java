package io.kcoord.interop.diff;

import static io.kcoord.interop.diff.Scenario.Pair.ALT;
import static io.kcoord.interop.diff.Scenario.Pair.MAIN;
import static io.kcoord.interop.diff.Scenarios.offsets;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.apache.kafka.common.message.DescribeGroupsResponseData;
import org.apache.kafka.common.message.LeaveGroupRequestData.MemberIdentity;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.DescribeGroupsResponse;
import org.apache.kafka.common.requests.JoinGroupResponse;

/**
 * Classic groups (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) with the requests a consumer
 * sends, each member on its own connection so that parked requests wait as they would.
 */
final class ClassicScenarios {
    private ClassicScenarios() {}

    private static final short V9 = 9;

    static List<Scenario> all() {
        List<Scenario> all = new ArrayList<>();
        all.add(new Scenario("classic-join-single", MAIN, Map.of(), ClassicScenarios::joinSingle));
        all.add(new Scenario("classic-join-old-versions", MAIN, Map.of(), ClassicScenarios::joinOldVersions));
        all.add(new Scenario("classic-two-members", MAIN, Map.of(), ClassicScenarios::twoMembers));
        all.add(new Scenario("classic-join-errors", MAIN, Map.of("classic-join-errors-in", 1), ClassicScenarios::joinErrors));
        all.add(new Scenario("classic-sync-errors", MAIN, Map.of(), ClassicScenarios::syncErrors));
        all.add(new Scenario("classic-heartbeat-errors", MAIN, Map.of(), ClassicScenarios::heartbeatErrors));
        all.add(new Scenario("classic-static-rejoin", MAIN, Map.of(), ClassicScenarios::staticRejoin));
        all.add(new Scenario("classic-leave", MAIN, Map.of(), ClassicScenarios::leave));
        all.add(new Scenario("classic-rejoin-while-completing", MAIN, Map.of(), ClassicScenarios::rejoinWhileCompleting));
        all.add(new Scenario("classic-cooperative-rebalance", MAIN, Map.of(), ClassicScenarios::cooperativeRebalance));
        all.add(new Scenario("classic-offsets", MAIN, Map.of("classic-offsets-in", 2), ClassicScenarios::offsetCommits));
        all.add(new Scenario("classic-describe-list-delete", MAIN, Map.of(), ClassicScenarios::describeListDelete));
        all.add(new Scenario("classic-join-storm", ALT, Map.of(), ClassicScenarios::joinStorm));
        all.add(new Scenario("classic-session-expiry", ALT, Map.of(), ClassicScenarios::sessionExpiry));
        all.add(new Scenario("classic-pending-member-expiry", ALT, Map.of(), ClassicScenarios::pendingMemberExpiry));
        return all;
    }

    /** One member through the whole cycle: MEMBER_ID_REQUIRED, join, sync, heartbeat. */
    static void joinSingle(Side s) throws Exception {
        String g = "classic-join-single";
        try (ClassicMember a = new ClassicMember(s, g, "client-a")) {
            a.join("first join asks for a member id", V9);
            a.join("join with the id", V9);
            a.call("leader's sync", a.syncRequest(Map.of(a.memberId, "a-parts")), (short) 5);
            a.heartbeat("heartbeat");
            a.call("sync again when stable", a.syncRequest(Map.of()), (short) 5);
            a.call("rejoin when stable (the leader forces a rebalance)", a.joinRequest(), V9);
            s.call("describe", Req.describeGroups(g), (short) 5);
        }
    }

    /** v3 admits a new member at once; v0 has no rebalance timeout; v6 names no null protocol. */
    static void joinOldVersions(Side s) throws Exception {
        String g = "classic-join-old-versions";
        try (ClassicMember a = new ClassicMember(s, g, "client-a")) {
            a.join("join v3", (short) 3);
            a.call("sync v3", a.syncRequest(Map.of(a.memberId, "x")), (short) 3);
            a.call("heartbeat v0", a.heartbeatRequest(), (short) 0);
            a.call("heartbeat with an old generation", a.heartbeatRequest(), (short) 2);
        }
        try (ClassicMember b = new ClassicMember(s, g + "-v0", "client-b")) {
            b.join("join v0", (short) 0);
            b.call("unknown member on v6", new ClassicMember(s, g + "-none", "c").joinRequestAs("ghost"), (short) 6);
        }
    }

    /** A second member: the first rejoins after its heartbeat says so; follower waits for the leader. */
    static void twoMembers(Side s) throws Exception {
        String g = "classic-two-members";
        try (ClassicMember a = new ClassicMember(s, g, "client-a"); ClassicMember b = new ClassicMember(s, g, "client-b")) {
            a.join("a asks for an id", V9);
            a.join("a joins", V9);
            a.call("a syncs", a.syncRequest(Map.of(a.memberId, "all")), (short) 5);
            CompletableFuture<AbstractResponse> bJoin = b.joinAsync("b asks for an id", V9);
            awaitState(s, g, "PreparingRebalance");
            a.heartbeat("a's heartbeat during the rebalance");
            AbstractResponse aJoin = a.call("a rejoins", a.joinRequest(), V9);
            a.keep(aJoin);
            b.keep(b.await("b's join completes", bJoin, V9));
            s.call("describe while completing", Req.describeGroups(g), (short) 5);
            CompletableFuture<AbstractResponse> bSync = b.syncAsync(Map.of(), (short) 5);
            awaitPendingSync(s, g);
            Map<String, String> plan = new LinkedHashMap<>();
            plan.put(a.memberId, "a-part");
            plan.put(b.memberId, "b-part");
            a.call("the leader's sync", a.syncRequest(plan), (short) 5);
            b.await("the follower's sync completes", bSync, (short) 5);
            b.heartbeat("b heartbeats");
            s.call("describe when stable", Req.describeGroups(g), (short) 5);
        }
    }

    static void joinErrors(Side s) throws Exception {
        String g = "classic-join-errors";
        try (ClassicMember a = new ClassicMember(s, g, "client-a")) {
            a.sessionTimeoutMs = 1;
            a.join("session timeout below the minimum", V9);
            a.sessionTimeoutMs = 45_000;
            a.call("unknown member id on an unknown group", a.joinRequestAs("ghost"), V9);
            a.join("asks for an id", V9);
            a.join("joins", V9);
            ClassicMember other = new ClassicMember(s, g, "client-b");
            other.protocol = "roundrobin";
            other.call("a protocol no member supports", other.joinRequest(), V9);
            other.close();
            ClassicMember empty = new ClassicMember(s, "", "client-c");
            empty.call("an empty group id", empty.joinRequest(), V9);
            empty.close();
            Member streams = new Member(s, g + "-streams", "member-s", Topo.simple("classic-join-errors-in"));
            streams.join("a streams group");
            ClassicMember intruder = new ClassicMember(s, g + "-streams", "client-d");
            intruder.call("JoinGroup to a streams group's id", intruder.joinRequest(), V9);
            intruder.close();
        }
    }

    static void syncErrors(Side s) throws Exception {
        String g = "classic-sync-errors";
        try (ClassicMember a = new ClassicMember(s, g, "client-a")) {
            a.call("sync to an unknown group", a.syncRequest(Map.of()), (short) 5);
            a.join("asks for an id", V9);
            a.join("joins", V9);
            int gen = a.generation;
            a.generation = gen + 1;
            a.call("sync with a wrong generation", a.syncRequest(Map.of()), (short) 5);
            a.generation = gen;
            a.protocol = "roundrobin";
            a.call("sync with another protocol name", a.syncRequest(Map.of()), (short) 5);
            a.protocol = "range";
            String id = a.memberId;
            a.memberId = "ghost";
            a.call("sync by an unknown member", a.syncRequest(Map.of()), (short) 5);
            a.memberId = id;
            a.call("sync v4 without protocol", a.syncRequest(Map.of(a.memberId, "p")), (short) 4);
        }
    }

    static void heartbeatErrors(Side s) throws Exception {
        String g = "classic-heartbeat-errors";
        try (ClassicMember a = new ClassicMember(s, g, "client-a").instance("instance-a")) {
            a.heartbeat("heartbeat to an unknown group");
            a.join("static member joins", V9);
            a.heartbeat("heartbeat before the sync");
            a.call("sync", a.syncRequest(Map.of(a.memberId, "p")), (short) 5);
            int gen = a.generation;
            a.generation = gen - 1;
            a.heartbeat("heartbeat with an older generation");
            a.generation = gen;
            String id = a.memberId;
            a.memberId = "not-the-static-member";
            a.heartbeat("heartbeat by another member id with the instance id");
            a.instanceId = "unknown-instance";
            a.heartbeat("heartbeat with an unknown instance id");
            a.memberId = id;
            a.instanceId = null;
            a.heartbeat("heartbeat without the instance id");
        }
    }

    /** A static member restarts: it takes its old place, no rebalance; the old id is fenced. */
    static void staticRejoin(Side s) throws Exception {
        String g = "classic-static-rejoin";
        try (ClassicMember a = new ClassicMember(s, g, "client-a").instance("instance-a")) {
            a.join("static member joins", V9);
            a.call("sync", a.syncRequest(Map.of(a.memberId, "kept")), (short) 5);
            String old = a.memberId;
            a.memberId = "";
            a.join("the restarted member joins v9 (skip assignment)", V9);
            a.call("sync", a.syncRequest(Map.of()), (short) 5);
            String second = a.memberId;
            a.memberId = "";
            a.join("restarts again and joins v5", (short) 5);
            ClassicMember zombie = new ClassicMember(s, g, "client-a").instance("instance-a");
            zombie.memberId = old;
            zombie.generation = a.generation;
            zombie.heartbeat("the first incarnation is fenced");
            zombie.memberId = second;
            zombie.heartbeat("so is the second");
            zombie.close();
            s.call("describe", Req.describeGroups(g), (short) 5);
        }
    }

    static void leave(Side s) throws Exception {
        String g = "classic-leave";
        try (ClassicMember a = new ClassicMember(s, g, "client-a").instance("instance-a");
                ClassicMember b = new ClassicMember(s, g + "-v1", "client-b")) {
            s.call("leave an unknown group", ClassicMember.leave(g, new MemberIdentity().setMemberId("x")), (short) 5);
            a.join("static member joins", V9);
            a.call("sync", a.syncRequest(Map.of(a.memberId, "p")), (short) 5);
            s.call("a batch with unknown members and a wrong instance", ClassicMember.leave(g,
                    new MemberIdentity().setMemberId("ghost"),
                    new MemberIdentity().setMemberId(a.memberId).setGroupInstanceId("instance-x"),
                    new MemberIdentity().setMemberId("").setGroupInstanceId("instance-unknown")), (short) 5);
            s.call("describe after the failed leaves", Req.describeGroups(g), (short) 5);
            s.call("an admin removes the static member by instance id", ClassicMember.leave(g,
                    new MemberIdentity().setMemberId("").setGroupInstanceId("instance-a")), (short) 5);
            s.call("describe after the leave", Req.describeGroups(g), (short) 5);
            b.join("b joins v3", (short) 3);
            b.call("b leaves v1", ClassicMember.leave(g + "-v1", new MemberIdentity().setMemberId(b.memberId)), (short) 1);
            b.call("b leaves again v2", ClassicMember.leave(g + "-v1", new MemberIdentity().setMemberId(b.memberId)), (short) 2);
        }
    }

    /** A follower that lost its join answer rejoins with the same metadata, then with new metadata. */
    static void rejoinWhileCompleting(Side s) throws Exception {
        String g = "classic-rejoin-while-completing";
        try (ClassicMember a = new ClassicMember(s, g, "client-a"); ClassicMember b = new ClassicMember(s, g, "client-b")) {
            a.join("a asks for an id", V9);
            a.join("a joins", V9);
            a.call("a syncs", a.syncRequest(Map.of(a.memberId, "all")), (short) 5);
            CompletableFuture<AbstractResponse> bJoin = b.joinAsync("b asks for an id", V9);
            awaitState(s, g, "PreparingRebalance");
            a.keep(a.call("a rejoins", a.joinRequest(), V9));
            b.keep(b.await("b joins", bJoin, V9));
            b.call("b rejoins with the same metadata", b.joinRequest(), V9);
            b.metadata = "new-subscription";
            CompletableFuture<AbstractResponse> bAgain = b.joinAsync(null, V9);
            awaitState(s, g, "PreparingRebalance");
            a.keep(a.call("a rejoins for the new metadata", a.joinRequest(), V9));
            b.await("b's new join completes", bAgain, V9);
        }
    }

    /**
     * The cooperative protocol as the coordinator sees it: after a rebalance that moved a
     * partition, the member that gave it up rejoins at once with its new owned partitions in
     * its metadata, which starts a second rebalance in which the partition is assigned.
     */
    static void cooperativeRebalance(Side s) throws Exception {
        String g = "classic-cooperative-rebalance";
        try (ClassicMember a = new ClassicMember(s, g, "client-a"); ClassicMember b = new ClassicMember(s, g, "client-b")) {
            a.protocol = "cooperative-sticky";
            b.protocol = "cooperative-sticky";
            a.metadata = "owned:p0,p1";
            a.join("a asks for an id", V9);
            a.join("a joins", V9);
            a.call("a syncs", a.syncRequest(Map.of(a.memberId, "p0,p1")), (short) 5);
            CompletableFuture<AbstractResponse> bJoin = b.joinAsync("b asks for an id", V9);
            awaitState(s, g, "PreparingRebalance");
            a.keep(a.call("a rejoins with what it owns", a.joinRequest(), V9));
            b.keep(b.await("b joins", bJoin, V9));
            CompletableFuture<AbstractResponse> bSync = b.syncAsync(Map.of(), (short) 5);
            awaitPendingSync(s, g);
            a.call("a keeps p0, revokes p1", a.syncRequest(Map.of(a.memberId, "p0", b.memberId, "")), (short) 5);
            b.await("b gets nothing yet", bSync, (short) 5);
            a.metadata = "owned:p0";
            CompletableFuture<AbstractResponse> aAgain = a.joinAsync(null, V9);
            awaitState(s, g, "PreparingRebalance");
            b.heartbeat("b is told to rejoin");
            b.keep(b.call("b rejoins", b.joinRequest(), V9));
            a.keep(a.await("a's second join completes", aAgain, V9));
            CompletableFuture<AbstractResponse> bSync2 = b.syncAsync(Map.of(), (short) 5);
            awaitPendingSync(s, g);
            a.call("the leader assigns p1 to b", a.syncRequest(Map.of(a.memberId, "p0", b.memberId, "p1")), (short) 5);
            b.await("b gets p1", bSync2, (short) 5);
        }
    }

    static void offsetCommits(Side s) throws Exception {
        String g = "classic-offsets";
        String t = g + "-in";
        try (ClassicMember a = new ClassicMember(s, g, "client-a")) {
            a.join("asks for an id", V9);
            a.join("joins", V9);
            s.call("commit before the sync", Req.commit(g, a.memberId, a.generation, offsets(t, 0, 5)), (short) 8);
            a.call("sync", a.syncRequest(Map.of(a.memberId, "p")), (short) 5);
            s.call("commit v8", Req.commit(g, a.memberId, a.generation, offsets(t, 0, 10, 1, 20)), (short) 8);
            s.call("commit v9 with the generation", Req.commit(g, a.memberId, a.generation, offsets(t, 1, 21)), (short) 9);
            s.call("commit with an old generation", Req.commit(g, a.memberId, a.generation - 1, offsets(t, 0, 11)), (short) 8);
            s.call("commit by an unknown member", Req.commit(g, "ghost", a.generation, offsets(t, 0, 12)), (short) 8);
            s.call("admin commit to the non-empty group", Req.commit(g, "", -1, offsets(t, 0, 13)), (short) 8);
            s.call("fetch as the member", Req.fetch(g, a.memberId, a.generation, Map.of(t, List.of(0, 1))), (short) 8);
            s.call("offset delete of a subscribed group", Req.offsetDelete(g, t, 0), (short) 0);
            a.call("leave", ClassicMember.leave(g, a.identity()), (short) 5);
            s.call("admin commit to the empty group", Req.commit(g, "", -1, offsets(t, 0, 14)), (short) 8);
            s.call("fetch at the end", Req.fetch(g, null, -1, Map.of(t, List.of(0, 1))), (short) 8);
        }
    }

    static void describeListDelete(Side s) throws Exception {
        String g = "classic-describe-list-delete";
        try (ClassicMember a = new ClassicMember(s, g, "client-a")) {
            a.join("asks for an id", V9);
            a.join("joins", V9);
            s.call("describe v6 while completing", Req.describeGroups(g, g + "-unknown"), (short) 6);
            s.call("list classic groups", Req.listGroups(List.of(), List.of("classic")), (short) 5,
                    j -> only(j, g));
            a.call("sync", a.syncRequest(Map.of(a.memberId, "p")), (short) 5);
            s.call("list stable groups", Req.listGroups(List.of("Stable"), List.of()), (short) 5, j -> only(j, g));
            s.call("delete a non-empty group", Req.deleteGroups(g), (short) 2);
            a.call("leave", ClassicMember.leave(g, a.identity()), (short) 5);
            s.call("describe empty", Req.describeGroups(g), (short) 5);
            s.call("list empty groups", Req.listGroups(List.of("Empty"), List.of()), (short) 5, j -> only(j, g));
            s.call("delete", Req.deleteGroups(g), (short) 2);
            s.call("describe after the delete", Req.describeGroups(g), (short) 6);
        }
    }

    /** Ten members join within the initial rebalance delay (ALT: 2 s): one generation for all. */
    static void joinStorm(Side s) throws Exception {
        String g = "classic-join-storm";
        List<ClassicMember> members = new ArrayList<>();
        List<CompletableFuture<AbstractResponse>> joins = new ArrayList<>();
        try {
            for (int i = 0; i < 10; i++) {
                ClassicMember m = new ClassicMember(s, g, "client-" + i);
                m.sessionTimeoutMs = 10_000;
                m.rebalanceTimeoutMs = 5_000;
                members.add(m);
                joins.add(m.joinAsync("member " + i + " asks for an id", V9));
            }
            // Which member leads depends on which join the coordinator reads first, so the
            // followers are recorded as one sorted list rather than by index.
            int leaders = 0;
            List<String> followers = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                JoinGroupResponse r = (JoinGroupResponse) joins.get(i).get(60, java.util.concurrent.TimeUnit.SECONDS);
                members.get(i).keep(r);
                if (r.data().leader().equals(r.data().memberId())) {
                    leaders++;
                    s.note("the leader's view", Json.MAPPER.valueToTree(Map.of(
                            "generation", r.data().generationId(), "members", r.data().members().size())));
                } else {
                    followers.add("error " + r.data().errorCode() + ", generation " + r.data().generationId()
                            + ", members " + r.data().members().size());
                }
            }
            java.util.Collections.sort(followers);
            s.note("the followers' views", Json.MAPPER.valueToTree(followers));
            s.note("leaders", Json.MAPPER.valueToTree(leaders));
        } finally {
            members.forEach(ClassicMember::close);
        }
    }

    /** ALT sessions: a member that stops heartbeating is removed and the group goes Empty. */
    static void sessionExpiry(Side s) throws Exception {
        String g = "classic-session-expiry";
        try (ClassicMember a = new ClassicMember(s, g, "client-a")) {
            a.sessionTimeoutMs = 1_500;
            a.rebalanceTimeoutMs = 1_500;
            CompletableFuture<AbstractResponse> join = a.joinAsync("asks for an id", V9);
            a.keep(a.await("joins after the initial delay", join, V9));
            a.call("sync", a.syncRequest(Map.of(a.memberId, "p")), (short) 5);
            awaitState(s, g, "Empty");
            a.heartbeat("heartbeat after expiry");
            s.call("describe", Req.describeGroups(g), (short) 5);
        }
    }

    /** ALT sessions: a member id handed out but never used is forgotten after the session timeout. */
    static void pendingMemberExpiry(Side s) throws Exception {
        String g = "classic-pending-member-expiry";
        try (ClassicMember a = new ClassicMember(s, g, "client-a"); ClassicMember b = new ClassicMember(s, g, "client-b")) {
            b.sessionTimeoutMs = 1_000;
            b.join("b asks for an id and never comes back", V9);
            a.sessionTimeoutMs = 10_000;
            a.rebalanceTimeoutMs = 10_000;
            CompletableFuture<AbstractResponse> join = a.joinAsync("a asks for an id", V9);
            // The group waits for b (a pending member) until its session ends, then completes.
            a.await("a's join completes without b", join, V9);
            b.join("b's id is unknown now", V9);
        }
    }

    // ---------------------------------------------------------------- helpers

    /** Polls DescribeGroups (unrecorded) until the group is in {@code state}. */
    static void awaitState(Side s, String group, String state) throws Exception {
        long deadline = System.currentTimeMillis() + 30_000;
        while (true) {
            AbstractResponse r = s.send(Req.describeGroups(group), (short) 5, "diff-suite");
            if (r != null) {
                DescribeGroupsResponseData.DescribedGroup d = ((DescribeGroupsResponse) r).data().groups().get(0);
                if (d.groupState().equals(state)) return;
            }
            if (System.currentTimeMillis() > deadline) {
                throw new AssertionError(s.server + ": " + group + " never reached " + state);
            }
            Thread.sleep(50);
        }
    }

    /**
     * Gives a follower's SyncGroup time to arrive before the leader's (the servers expose no
     * pending-sync count; the follower's answer is the same either way, which the step checks).
     */
    static void awaitPendingSync(Side s, String group) throws Exception {
        Thread.sleep(300);
        awaitState(s, group, "CompletingRebalance");
    }

    /** A ListGroups answer reduced to the groups of this scenario. */
    static com.fasterxml.jackson.databind.JsonNode only(com.fasterxml.jackson.databind.JsonNode json, String prefix) {
        com.fasterxml.jackson.databind.node.ObjectNode copy = (com.fasterxml.jackson.databind.node.ObjectNode) json.deepCopy();
        com.fasterxml.jackson.databind.node.ArrayNode kept = Json.MAPPER.createArrayNode();
        copy.withArray("groups").forEach(g -> {
            if (g.get("groupId").asText().startsWith(prefix)) kept.add(g);
        });
        copy.set("groups", kept);
        return copy;
    }
}
