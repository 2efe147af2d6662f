package io.kcoord.interop.diff;

import static io.kcoord.interop.diff.Scenario.Pair.MAIN;
import static io.kcoord.interop.diff.Scenarios.offsets;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.message.OffsetFetchRequestData;
import org.apache.kafka.common.requests.OffsetFetchRequest;
import org.apache.kafka.common.requests.StreamsGroupHeartbeatResponse.Status;

/** OffsetCommit / OffsetFetch / OffsetDelete against streams groups. */
final class OffsetScenarios {
    private OffsetScenarios() {}

    static List<Scenario> all() {
        List<Scenario> all = new ArrayList<>();
        all.add(new Scenario("offsets-current-epoch", MAIN, Map.of("offsets-current-epoch-in", 2), OffsetScenarios::currentEpoch));
        all.add(new Scenario("offsets-older-epoch-source", MAIN, Map.of("offsets-older-epoch-source-in", 4), OffsetScenarios::olderEpochSource));
        all.add(new Scenario("offsets-older-epoch-repartition", MAIN, Map.of("offsets-older-epoch-repartition-in", 2),
                OffsetScenarios::olderEpochRepartition));
        all.add(new Scenario("offset-delete", MAIN, Map.of("offset-delete-in", 2, "offset-delete-other", 1), OffsetScenarios::offsetDelete));
        all.add(new Scenario("offset-fetch-versions", MAIN, Map.of("offset-fetch-versions-in", 2), OffsetScenarios::fetchVersions));
        return all;
    }

    static void currentEpoch(Side s) throws Exception {
        String g = "offsets-current-epoch";
        String t = g + "-in";
        Member a = new Member(s, g, "member-a", Topo.simple(t));
        a.join("join");
        a.hb("ack");
        int e = a.epoch;
        s.call("commit at the current epoch", Req.commit(g, "member-a", e, offsets(t, 0, 10, 1, 20)), (short) 9);
        s.call("fetch as the member", Req.fetch(g, "member-a", e, Map.of(t, List.of(0, 1))), (short) 9);
        s.call("fetch as an admin", Req.fetch(g, null, -1, Map.of(t, List.of(0, 1))), (short) 9);
        s.call("fetch all topics", Req.fetch(g, null, -1, null), (short) 9);
        s.call("commit by an unknown member", Req.commit(g, "member-zz", e, offsets(t, 0, 11)), (short) 9);
        s.call("commit at a newer epoch", Req.commit(g, "member-a", e + 1, offsets(t, 0, 11)), (short) 9);
        s.call("commit at epoch 0", Req.commit(g, "member-a", 0, offsets(t, 0, 11)), (short) 9);
        s.call("admin commit to a non-empty group", Req.commit(g, "", -1, offsets(t, 0, 12)), (short) 9);
        s.call("commit v8 (classic generation) to a streams group", Req.commit(g, "member-a", e, offsets(t, 0, 13)), (short) 8);
        s.call("fetch by an unknown member", Req.fetch(g, "member-zz", e, Map.of(t, List.of(0))), (short) 9);
        s.call("fetch at a newer epoch", Req.fetch(g, "member-a", e + 1, Map.of(t, List.of(0))), (short) 9);
        s.call("commit to an unknown topic", Req.commit(g, "member-a", e, offsets(g + "-nope", 0, 1)), (short) 9);
        s.call("commit to an unknown group at an epoch", Req.commit(g + "-unknown", "member-a", 3, offsets(t, 0, 1)), (short) 9);
        s.call("fetch of an unknown group", Req.fetch(g + "-unknown", null, -1, Map.of(t, List.of(0))), (short) 9);
        s.call("fetch at the end", Req.fetch(g, null, -1, Map.of(t, List.of(0, 1))), (short) 9);
    }

    static void olderEpochSource(Side s) throws Exception {
        String g = "offsets-older-epoch-source";
        String t = g + "-in";
        Member a = new Member(s, g, "member-a", Topo.simple(t)).ties();
        Member b = new Member(s, g, "member-b", Topo.simple(t)).ties();
        a.join("a joins");
        a.hb("a acks");
        int old = a.epoch;
        b.join("b joins");
        Member.settleAll("settled", a, b);
        int kept = a.active.get(0).partitions().get(0);
        int given = b.active.get(0).partitions().get(0);
        s.call("a commits its kept task at its older epoch", Req.commit(g, "member-a", old, offsets(t, kept, 5)), (short) 9);
        s.call("b commits at an older epoch", Req.commit(g, "member-b", b.epoch - 1, offsets(t, given, 5)), (short) 9);
        s.call("a commits a task it gave away at its older epoch", Req.commit(g, "member-a", old, offsets(t, given, 6)), (short) 9);
        s.call("a fetches at its older epoch", Req.fetch(g, "member-a", old, Map.of(t, List.of(kept))), (short) 9);
        s.call("fetch", Req.fetch(g, null, -1, Map.of(t, List.of(0, 1, 2, 3))), (short) 9, "diff-suite", true);
    }

    static void olderEpochRepartition(Side s) throws Exception {
        String g = "offsets-older-epoch-repartition";
        String rp = g + "-rp";
        var topo = Topo.epoch(0).sub("0", List.of(g + "-in")).repartitionSink(rp)
                .sub("1", List.of()).repartitionSource(rp, 0).build();
        Member a = new Member(s, g, "member-a", topo).ties();
        a.join("a joins");
        a.pollUntil("a assigned", d -> d.errorCode() == 0 && !Member.hasStatus(d, Status.MISSING_INTERNAL_TOPICS)
                && a.active.size() == 2, 20_000);
        a.hb("a acks");
        int old = a.epoch;
        // b comes and goes before a hears of it: a's epoch moves on, its tasks stay (assigned at "old").
        Member b = new Member(s, g, "member-b", topo);
        b.join("b joins");
        b.leave("b leaves", -1);
        a.hb("a at the new epoch keeps every task");
        s.call("a commits the repartition topic at its older epoch", Req.commit(g, "member-a", old,
                Map.of(rp, java.util.Map.of(0, 7L, 1, 8L))), (short) 9);
        s.call("a commits the source topic at its older epoch", Req.commit(g, "member-a", old,
                Map.of(g + "-in", java.util.Map.of(0, 7L, 1, 8L))), (short) 9);
        s.call("a commits the repartition topic before its assignment epoch", Req.commit(g, "member-a", old - 1,
                Map.of(rp, java.util.Map.of(0, 9L))), (short) 9);
        s.call("fetch", Req.fetch(g, null, -1, Map.of(rp, List.of(0, 1), g + "-in", List.of(0, 1))), (short) 9);
    }

    static void offsetDelete(Side s) throws Exception {
        String g = "offset-delete";
        String t = g + "-in";
        Member a = new Member(s, g, "member-a", Topo.simple(t));
        a.join("join");
        a.hb("ack");
        s.call("commit", Req.commit(g, "member-a", a.epoch, offsets(t, 0, 3, 1, 4)), (short) 9);
        s.call("commit a topic the group does not read", Req.commit(g, "member-a", a.epoch, offsets(g + "-other", 0, 9)), (short) 9);
        s.call("delete offsets of a subscribed topic", Req.offsetDelete(g, t, 0), (short) 0);
        s.call("delete offsets of a topic the group does not read", Req.offsetDelete(g, g + "-other", 0), (short) 0);
        a.leave("leave", -1);
        s.call("delete offsets of the empty group", Req.offsetDelete(g, t, 0), (short) 0);
        s.call("fetch after delete", Req.fetch(g, null, -1, Map.of(t, List.of(0, 1), g + "-other", List.of(0))), (short) 9);
        s.call("delete offsets of an unknown group", Req.offsetDelete(g + "-unknown", t, 0), (short) 0);
    }

    static void fetchVersions(Side s) throws Exception {
        String g = "offset-fetch-versions";
        String t = g + "-in";
        Member a = new Member(s, g, "member-a", Topo.simple(t));
        a.join("join");
        s.call("commit", Req.commit(g, "member-a", a.epoch, offsets(t, 0, 42)), (short) 9);
        for (short v : new short[] {1, 5, 7}) {
            s.call("fetch v" + v, OffsetFetchRequest.Builder.forTopicNames(new OffsetFetchRequestData().setGroupId(g)
                    .setTopics(List.of(new OffsetFetchRequestData.OffsetFetchRequestTopic().setName(t)
                            .setPartitionIndexes(List.of(0, 1))))
                    .setRequireStable(v >= 7), false), v);
        }
        s.call("fetch v8", Req.fetch(g, null, -1, Map.of(t, List.of(0, 1))), (short) 8);
        s.call("commit v10 by name", Req.commit(g, "member-a", a.epoch, offsets(t, 1, 43)), (short) 9);
    }
}
