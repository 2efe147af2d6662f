package io.kcoord.interop.diff;

import static io.kcoord.interop.diff.Scenario.Pair.MAIN;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.internals.ConsumerProtocol;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.message.LeaveGroupRequestData.MemberIdentity;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.SyncGroupResponse;
import org.apache.kafka.common.utils.Utils;

/**
 * Kafka 4.4's online migration between classic and consumer groups: a consumer-protocol
 * member upgrades a classic group with members, classic members join, sync, heartbeat and
 * leave inside a consumer group, and the group goes back to classic when its last
 * consumer-protocol member leaves. The classic members send real consumer-protocol metadata.
 * Which partitions the assignor keeps for whom may be a tie, so SyncGroup answers are
 * recorded by how many partitions they give, and ConsumerGroupDescribe as a tie.
 */
final class MigrationScenarios {
    private MigrationScenarios() {}

    private static final short V9 = 9;
    private static final short SYNC_V = 5;

    static List<Scenario> all() {
        List<Scenario> all = new ArrayList<>();
        all.add(new Scenario("migration-upgrade-with-members", MAIN, Map.of("migration-upgrade-with-members-in", 3),
                MigrationScenarios::upgradeWithMembers));
        all.add(new Scenario("migration-classic-member-in-consumer-group", MAIN,
                Map.of("migration-classic-member-in-consumer-group-in", 2), MigrationScenarios::classicMember));
        all.add(new Scenario("migration-downgrade", MAIN, Map.of("migration-downgrade-in", 2),
                MigrationScenarios::downgrade));
        return all;
    }

    /** A classic consumer of {@code topic}: what it owns goes in its subscription. */
    private static final class Classic {
        final ClassicMember m;
        final String topic;
        List<TopicPartition> owned = new ArrayList<>();

        Classic(Side s, String group, String client, String topic) {
            this.m = new ClassicMember(s, group, client);
            this.topic = topic;
            subscribe();
        }

        void subscribe() {
            m.rawMetadata = Utils.toArray(ConsumerProtocol.serializeSubscription(
                    new ConsumerPartitionAssignor.Subscription(List.of(topic), null, owned)));
        }

        /** SyncGroup, recorded with the assignment as the number of partitions it gives. */
        AbstractResponse sync(String step, Map<String, byte[]> assignments) throws IOException {
            AbstractResponse r = m.send(m.syncRequestRaw(assignments), SYNC_V);
            int count = -1;
            if (r instanceof SyncGroupResponse sr && sr.data().errorCode() == 0) {
                owned = sr.data().assignment().length == 0 ? new ArrayList<>()
                        : ConsumerProtocol.deserializeAssignment(ByteBuffer.wrap(sr.data().assignment())).partitions();
                count = owned.size();
                subscribe();
            }
            int partitions = count;
            m.side.record(step, r, SYNC_V, false, j -> {
                ((ObjectNode) j).put("assignment", partitions + " partitions");
                return j;
            });
            return r;
        }

        void join(String step) throws IOException {
            m.join(step, V9);
        }
    }

    private static byte[] assignment(String topic, int... partitions) {
        List<TopicPartition> tps = new ArrayList<>();
        for (int p : partitions) tps.add(new TopicPartition(topic, p));
        return Utils.toArray(ConsumerProtocol.serializeAssignment(new ConsumerPartitionAssignor.Assignment(tps)));
    }

    /** Two classic members, then a consumer joins: the group is upgraded with them in it. */
    static void upgradeWithMembers(Side s) throws Exception {
        String g = "migration-upgrade-with-members";
        String t = g + "-in";
        s.nameTopics(t);
        Classic a = new Classic(s, g, "client-a", t);
        Classic b = new Classic(s, g, "client-b", t);
        a.join("a asks for an id");
        a.join("a joins");
        a.sync("a syncs", Map.of(a.m.memberId, assignment(t, 0, 1, 2)));
        CompletableFuture<AbstractResponse> bJoin = b.m.joinAsync("b asks for an id", V9);
        ClassicScenarios.awaitState(s, g, "PreparingRebalance");
        a.m.heartbeat("a's heartbeat during the rebalance");
        a.m.keep(a.m.call("a rejoins", a.m.joinRequest(), V9));
        b.m.keep(b.m.await("b's join completes", bJoin, V9));
        CompletableFuture<AbstractResponse> bSync = b.m.syncAsync(Map.of(), SYNC_V);
        ClassicScenarios.awaitPendingSync(s, g);
        Map<String, byte[]> plan = new LinkedHashMap<>();
        plan.put(a.m.memberId, assignment(t, 0, 1));
        plan.put(b.m.memberId, assignment(t, 2));
        a.sync("the leader's sync", plan);
        b.m.await("b's sync completes", bSync, SYNC_V);
        b.owned = List.of(new TopicPartition(t, 2));
        b.subscribe();
        s.call("describe the classic group", Req.describeGroups(g), (short) 5);

        ConsumerMember c = new ConsumerMember(s, g, "member-c").topics(t).ties();
        c.join("a consumer member joins: the group is upgraded");
        s.call("list after the upgrade", Req.listGroups(List.of(), List.of()), (short) 5, j -> Scenarios.onlyGroups(j, g));
        ConsumerScenarios.describeTies(s, "describe after the upgrade", g);
        s.call("DescribeGroups of the upgraded group", Req.describeGroups(g), (short) 5);
        a.m.heartbeat("a is told to rejoin");
        b.m.heartbeat("b is told to rejoin");
        a.join("a rejoins the consumer group, revoking one");
        a.sync("a syncs in the consumer group", Map.of());
        a.m.heartbeat("a, revoking, is told to rejoin again");
        a.join("a rejoins owning one");
        a.sync("a syncs at the new epoch", Map.of());
        b.join("b rejoins");
        b.sync("b syncs", Map.of());
        c.heartbeat("c gets the released partition");
        a.m.heartbeat("a heartbeats when stable");
        ConsumerScenarios.describeTies(s, "describe when stable", g);
    }

    /** Consumer member c joins {@code g} and acks; classic member d joins it after. */
    private static Classic consumerThenClassic(Side s, String g, String t, ConsumerMember c) throws Exception {
        s.nameTopics(t);
        c.join("c joins");
        c.heartbeat("c acks");
        Classic d = new Classic(s, g, "client-d", t);
        d.join("d asks for an id");
        d.join("d joins the consumer group");
        return d;
    }

    /** A classic member joins a consumer group with a consumer member in it. */
    static void classicMember(Side s) throws Exception {
        String g = "migration-classic-member-in-consumer-group";
        String t = g + "-in";
        ConsumerMember c = new ConsumerMember(s, g, "member-c").topics(t).ties();
        Classic d = consumerThenClassic(s, g, t, c);
        String protocol = d.m.protocol;
        d.m.protocol = "roundrobin";
        d.sync("d syncs with another protocol name", Map.of());
        d.m.protocol = protocol;
        d.sync("d syncs while its partition is still c's", Map.of());
        d.m.heartbeat("d heartbeats while it waits");
        c.heartbeat("c revokes");
        c.heartbeat("c acks the revocation");
        d.m.heartbeat("d's partition is free: it is told to rejoin");
        d.join("d rejoins");
        d.sync("d syncs and gets its partition", Map.of());
        int generation = d.m.generation;
        d.m.generation = generation + 1;
        d.m.heartbeat("a heartbeat with a wrong generation");
        d.m.generation = generation;
        ClassicMember asC = new ClassicMember(s, g, "client-x");
        asC.memberId = c.memberId;
        asC.generation = c.epoch;
        asC.heartbeat("a classic heartbeat as the consumer member");
        asC.close();
        ConsumerScenarios.describeTies(s, "describe with a classic member", g);
        d.m.call("d leaves", ClassicMember.leave(g, d.m.identity()), (short) 5);
        ConsumerScenarios.describeTies(s, "describe after d left", g);
        d.m.close();
    }

    /** The consumer member leaves a group whose other member is classic: back to classic. */
    static void downgrade(Side s) throws Exception {
        String g = "migration-downgrade";
        String t = g + "-in";
        ConsumerMember c = new ConsumerMember(s, g, "member-c").topics(t).ties();
        Classic d = consumerThenClassic(s, g, t, c);
        c.heartbeat("c revokes");
        c.heartbeat("c acks the revocation");
        d.m.heartbeat("d is told to rejoin");
        d.join("d rejoins");
        d.sync("d syncs", Map.of());
        c.leave("c leaves: the group is downgraded");
        s.call("list after the downgrade", Req.listGroups(List.of(), List.of()), (short) 5, j -> Scenarios.onlyGroups(j, g));
        s.call("describe after the downgrade", Req.describeGroups(g), (short) 5);
        s.call("ConsumerGroupDescribe after the downgrade", Req.consumerDescribe(false, g), (short) 1);
        d.m.heartbeat("d heartbeats in the classic group");
        // An eager consumer gives up what it owns before it rejoins.
        d.owned = new ArrayList<>();
        d.subscribe();
        d.join("d rejoins the classic group");
        d.sync("d, the leader, syncs", Map.of(d.m.memberId, assignment(t, 0, 1)));
        d.m.heartbeat("d heartbeats when stable");
        s.call("describe when stable", Req.describeGroups(g), (short) 5);
        d.m.call("d leaves", ClassicMember.leave(g, new MemberIdentity().setMemberId(d.m.memberId)), (short) 5);
        d.m.close();
    }
}
