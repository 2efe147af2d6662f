package io.kcoord.interop.diff;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Stream;
import org.apache.kafka.common.message.ListGroupsResponseData;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.CreateTopicsResponse;
import org.apache.kafka.common.requests.FindCoordinatorResponse;
import org.apache.kafka.common.requests.ListGroupsResponse;
import org.apache.kafka.common.requests.MetadataResponse;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.TestInstance;

/**
 * The differential conformance suite: every scenario runs on Apache Kafka 4.4 and on kcoord
 * (same settings, same requests, same names); each step's masked response must be equal, except
 * for the differences {@link KnownDifferences} declares. Transcripts of both servers are written
 * to target/diff-transcripts/.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class DiffSuiteTest {
    private final Map<Scenario.Pair, Servers> pairs = new LinkedHashMap<>();
    private final Set<KnownDifferences.Entry> used = new HashSet<>();
    private final List<Scenario> scenarios = selected();

    /**
     * Every scenario, or those whose name matches the regular expression in the system
     * property {@code diff.scenarios} (e.g. {@code -Ddiff.scenarios='acls-.*|scram-.*'}).
     */
    private static List<Scenario> selected() {
        String only = System.getProperty("diff.scenarios", "");
        if (only.isBlank()) return Scenarios.all();
        java.util.regex.Pattern names = java.util.regex.Pattern.compile(only);
        return Scenarios.all().stream().filter(sc -> names.matcher(sc.name()).matches()).toList();
    }

    @BeforeAll
    void startServers() throws Exception {
        if (Boolean.getBoolean("diff.kafkaLogs")) {
            org.apache.logging.log4j.core.config.Configurator.setLevel(
                    "org.apache.kafka.coordinator.group", org.apache.logging.log4j.Level.INFO);
        }
        // Only the pairs the scenarios use, started side by side.
        Map<Scenario.Pair, CompletableFuture<Servers>> starting = new LinkedHashMap<>();
        for (Scenario sc : scenarios) {
            starting.computeIfAbsent(sc.pair(), pair -> CompletableFuture.supplyAsync(
                    () -> start(pair.name().toLowerCase(java.util.Locale.ROOT), Settings.of(pair))));
        }
        starting.forEach((pair, servers) -> pairs.put(pair, servers.join()));
        for (Map.Entry<Scenario.Pair, Servers> e : pairs.entrySet()) {
            Map<String, Integer> topics = new LinkedHashMap<>();
            for (Scenario sc : scenarios) if (sc.pair() == e.getKey()) topics.putAll(sc.topics());
            prepare(e.getValue(), e.getValue().kafkaBootstrap(), topics);
            prepare(e.getValue(), e.getValue().kcoordBootstrap(), topics);
        }
    }

    private static Servers start(String name, Map<String, String> settings) {
        try {
            return Servers.start(name, settings);
        } catch (Exception e) {
            throw new RuntimeException(e);
        }
    }

    /** Creates the scenarios' topics and waits until the server serves groups and sees them. */
    private static void prepare(Servers servers, String bootstrap, Map<String, Integer> topics) throws Exception {
        try (Side s = new Side("setup", bootstrap, servers)) {
            long deadline = System.currentTimeMillis() + 60_000;
            // Kafka creates __consumer_offsets on the first FindCoordinator and loads its shards.
            while (true) {
                FindCoordinatorResponse fc = (FindCoordinatorResponse) s.send(Req.findCoordinator("warm-up"), (short) 6, "setup");
                ListGroupsResponse lg = (ListGroupsResponse) s.send(Req.listGroups(List.of(), List.of()), (short) 5, "setup");
                if (fc != null && lg != null && fc.data().coordinators().get(0).errorCode() == 0
                        && lg.data().errorCode() == 0) break;
                if (System.currentTimeMillis() > deadline) throw new IllegalStateException(bootstrap + " serves no groups");
                Thread.sleep(200);
            }
            if (topics.isEmpty()) return;
            CreateTopicsResponse ct = (CreateTopicsResponse) s.send(Req.createTopics(topics), (short) 7, "setup");
            ct.data().topics().forEach(t -> {
                if (t.errorCode() != 0) throw new IllegalStateException("CreateTopics " + t.name() + ": " + t.errorMessage());
            });
            while (true) {
                MetadataResponse md = (MetadataResponse) s.send(Req.metadata(topics.keySet().toArray(String[]::new)), (short) 12, "setup");
                if (md.data().topics().stream().allMatch(t -> t.errorCode() == 0
                        && t.partitions().size() == topics.get(t.name()))) break;
                if (System.currentTimeMillis() > deadline) throw new IllegalStateException(bootstrap + ": topics not visible");
                Thread.sleep(100);
            }
            // Metadata shows a topic a moment before Kafka's group coordinator has the new image:
            // a probe group reading every topic heartbeats until no source topic is missing.
            Member probe = new Member(s, "diff-suite-probe-" + servers.name, "probe",
                    Topo.epoch(0).sub("0", new ArrayList<>(topics.keySet())).build());
            while (true) {
                var d = probe.quiet();
                if (d != null && d.errorCode() == 0 && !Member.hasStatus(d,
                        org.apache.kafka.common.requests.StreamsGroupHeartbeatResponse.Status.MISSING_SOURCE_TOPICS)) break;
                if (System.currentTimeMillis() > deadline) throw new IllegalStateException(bootstrap + ": coordinator lacks the topics");
                Thread.sleep(100);
            }
            probe.epoch = -1;
            s.send(new org.apache.kafka.common.requests.StreamsGroupHeartbeatRequest.Builder(
                    new org.apache.kafka.common.message.StreamsGroupHeartbeatRequestData().setGroupId(probe.groupId)
                            .setMemberId("probe").setMemberEpoch(-1)), (short) 1, "setup");
            s.send(Req.deleteGroups(probe.groupId), (short) 2, "setup");
        }
    }

    @AfterAll
    void stopServers() throws Exception {
        for (Servers s : pairs.values()) s.close();
        // A run of some scenarios says nothing about the entries the others need.
        if (scenarios.size() != Scenarios.all().size()) return;
        List<String> unused = new ArrayList<>();
        for (KnownDifferences.Entry e : KnownDifferences.ALL) {
            if (!used.contains(e)) unused.add(e.scenario() + " / " + e.step() + " / " + e.path() + ": " + e.reason());
        }
        Path report = Paths.get("target", "diff-transcripts", "unused-known-differences.txt");
        Files.createDirectories(report.getParent());
        Files.writeString(report, String.join("\n", unused) + "\n");
        if (!unused.isEmpty()) {
            System.out.println("Known differences no scenario needed any more (delete them?):\n  "
                    + String.join("\n  ", unused));
        }
    }

    @TestFactory
    Stream<DynamicTest> scenarios() {
        return scenarios.stream().map(sc -> DynamicTest.dynamicTest(sc.name(), () -> run(sc)));
    }

    private void run(Scenario sc) throws Exception {
        Servers servers = pairs.get(sc.pair());
        Side kafka = new Side("kafka", servers.kafkaBootstrap(), servers);
        Side kcoord = new Side("kcoord", servers.kcoordBootstrap(), servers);
        CompletableFuture<Void> a = CompletableFuture.runAsync(() -> runSide(sc, kafka));
        CompletableFuture<Void> b = CompletableFuture.runAsync(() -> runSide(sc, kcoord));
        CompletableFuture.allOf(a, b).join();
        kafka.close();
        kcoord.close();
        writeTranscripts(sc, kafka, kcoord);
        String failure = compare(sc, kafka, kcoord);
        if (failure != null) throw new AssertionError(failure);
    }

    private static void runSide(Scenario sc, Side side) {
        try {
            sc.body().run(side);
        } catch (Throwable e) {
            ObjectNode err = JsonNodeFactory.instance.objectNode();
            err.put("scenarioAborted", String.valueOf(e));
            side.note("aborted", err);
            if (side.isKafka()) {
                // Kafka is the reference: a script that fails on Kafka is a bug of the script.
                e.printStackTrace(System.out);
            }
        }
    }

    private String compare(Scenario sc, Side kafka, Side kcoord) {
        Map<String, Side.Step> ka = new LinkedHashMap<>();
        Map<String, Side.Step> kc = new LinkedHashMap<>();
        kafka.transcript.forEach(st -> ka.put(st.name(), st));
        kcoord.transcript.forEach(st -> kc.put(st.name(), st));
        Set<String> steps = new LinkedHashSet<>(ka.keySet());
        steps.addAll(kc.keySet());
        StringBuilder out = new StringBuilder();
        for (String step : steps) {
            Side.Step x = ka.get(step);
            Side.Step y = kc.get(step);
            JsonNode jx = x == null ? null : x.json();
            JsonNode jy = y == null ? null : y.json();
            List<String> paths = x == null || y == null ? List.of("") : Json.diff(jx, jy);
            List<String> left = excuse(sc.name(), step, paths);
            if (!left.isEmpty() && x != null && y != null && (x.ties() || y.ties())) {
                left = excuse(sc.name(), step, Json.diff(Json.countTasks(jx), Json.countTasks(jy)));
            }
            if (!left.isEmpty()) {
                out.append("\n=== scenario ").append(sc.name()).append(", step '").append(step)
                        .append("': paths that differ: ").append(left)
                        .append("\n--- Kafka 4.4:\n").append(jx == null ? "(no such step)" : Json.pretty(jx))
                        .append("\n--- kcoord:\n").append(jy == null ? "(no such step)" : Json.pretty(jy)).append('\n');
            }
        }
        return out.length() == 0 ? null : out.toString();
    }

    private List<String> excuse(String scenario, String step, List<String> paths) {
        List<String> left = new ArrayList<>();
        for (String p : paths) {
            boolean excused = false;
            for (KnownDifferences.Entry e : KnownDifferences.ALL) {
                if (e.matches(scenario, step, p)) {
                    used.add(e);
                    excused = true;
                }
            }
            if (!excused) left.add(p);
        }
        return left;
    }

    private static void writeTranscripts(Scenario sc, Side kafka, Side kcoord) throws Exception {
        Path dir = Paths.get("target", "diff-transcripts");
        Files.createDirectories(dir);
        for (Side side : List.of(kafka, kcoord)) {
            StringBuilder text = new StringBuilder();
            for (Side.Step st : side.transcript) {
                text.append("### ").append(st.name()).append(st.ties() ? " (ties)" : "").append('\n')
                        .append(Json.pretty(st.json())).append("\n\n");
            }
            Files.writeString(dir.resolve(sc.name() + "." + side.server + ".txt"), text);
        }
    }
}
