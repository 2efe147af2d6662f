package io.kcoord.interop;

import io.kcoord.interop.apps.EosCountAppMain;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.apache.kafka.clients.admin.NewTopic;

/**
 * An {@code exactly_once_v2} Kafka Streams 4.4 app (a repartition topic, a count store and its
 * changelog) through two kcoord nodes in front of a real Apache Kafka 4.4 cluster
 * ({@link KafkaCluster}): the cluster's transaction coordinator runs the app's transactions, the
 * offsets kcoord checks are committed by the cluster with them (docs/gateway.md). An app
 * instance is killed with SIGKILL mid-stream and restarted, then the kcoord node serving the
 * group is killed with SIGKILL; a read_committed consumer of the output, reading the cluster
 * directly, then sees every group's counts 1, 2, ..., n exactly once each and in order.
 */
class GatewayExactlyOnceTest {
    private static final String APP = "gw-eos-count";
    private static final int PARTITIONS = 4;
    private static final int GROUPS = 20;
    private static final int RECORDS = 2000;
    private static final int SHARDS = 8;

    private KafkaCluster cluster;
    private final List<Kcoord> nodes = new ArrayList<>();
    private final Map<String, Process> instances = new HashMap<>();
    private final Map<String, Path> logs = new HashMap<>();
    private final Map<String, Path> stateDirs = new HashMap<>();
    private final List<AutoCloseable> open = new ArrayList<>();

    @BeforeEach
    void start() throws Exception {
        cluster = KafkaCluster.shared();
        for (int i = 0; i < 2; i++) {
            List<String> config = new ArrayList<>(Kcoord.fastStreamsGroups());
            config.add("upstream.bootstrap.servers=" + cluster.bootstrap());
            config.add("gateway.broker.port.start=" + GatewayTest.freePortRange(3));
            config.add("gateway.coordinator.log.topic=gw-eos-coordinator-log");
            config.add("gateway.node.session.timeout.ms=6000");
            config.add("offsets.topic.num.partitions=" + SHARDS);
            nodes.add(Kcoord.start("gateway-eos-" + i, config.toArray(String[]::new)));
        }
        cluster.createTopics(List.of(new NewTopic("eos-in", PARTITIONS, (short) 3),
                new NewTopic("eos-out", PARTITIONS, (short) 3)));
    }

    @AfterEach
    void stop() throws Exception {
        for (Process p : instances.values()) p.destroyForcibly();
        for (AutoCloseable c : open) {
            try {
                c.close();
            } catch (Exception ignored) {
                // closing anyway
            }
        }
        for (Kcoord node : nodes) node.close();
    }

    private String bootstrap() {
        return nodes.get(0).bootstrap() + "," + nodes.get(1).bootstrap();
    }

    private void startInstance(String name) throws Exception {
        Path state = stateDirs.computeIfAbsent(name, n -> {
            try {
                return Clients.tempDir(APP + "-" + n);
            } catch (java.io.IOException e) {
                throw new RuntimeException(e);
            }
        });
        Path log = Path.of(System.getProperty("kcoord.logs", "target/kcoord-logs"),
                APP + "-" + name + "-" + System.nanoTime() + ".log");
        Files.createDirectories(log.getParent());
        logs.put(name, log);
        instances.put(name, Tools.spawnJava(log, EosCountAppMain.class.getName(), bootstrap(), APP, state.toString()));
    }

    private void awaitRunning(String name) throws Exception {
        Clients.await(() -> {
            try {
                return Files.readString(logs.get(name)).contains("STATE RUNNING");
            } catch (java.io.IOException e) {
                return false;
            }
        }, Duration.ofSeconds(120), () -> "instance " + name + " is not RUNNING");
    }

    @Test
    void counts_stay_exactly_once_through_the_kill_of_an_instance_and_of_a_kcoord_node() throws Exception {
        startInstance("a");
        startInstance("b");
        awaitRunning("a");
        awaitRunning("b");

        EosCounts counts = new EosCounts(RECORDS, GROUPS);
        counts.startInput(cluster.bootstrap(), 150);

        counts.awaitSent(RECORDS / 4);
        Process victim = instances.remove("a");
        victim.destroyForcibly();
        victim.waitFor(30, TimeUnit.SECONDS);
        startInstance("a");

        counts.awaitSent(RECORDS / 2);
        int owner = GatewayNodesTest.servingNode(nodes, APP, SHARDS);
        nodes.get(owner).kill();

        counts.awaitInput();
        counts.assertCountedExactlyOnce(cluster.bootstrap(), open, () -> "");
    }
}
