package io.kcoord.interop.diff;

import io.kcoord.interop.Kcoord;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.metadata.storage.Formatter;
import org.apache.kafka.server.common.Feature;
import org.apache.kafka.server.common.MetadataVersion;

/**
 * A pair of servers with the same group.streams.* settings: a single-node KRaft Apache Kafka
 * 4.4 (combined broker and controller, from the kafka_2.13 artifact) and kcoord.
 *
 * <p>The Kafka node is started as {@code kafka-storage.sh format} and {@code kafka-server-start.sh}
 * would: {@link Formatter} then {@link KafkaRaftServer}. (Kafka's test kit,
 * KafkaClusterTestKit, needs kafka-clients' test fixtures for its SSL set-up, which Maven
 * Central does not serve for 4.4.0.) It is production-like: {@code MetadataVersion.LATEST_PRODUCTION}
 * (4.3-IV0 on 4.4) with every production feature at its default level for it (so
 * {@code streams.version=1}: streams groups on), both {@code unstable.*.enable} keys false (the
 * test kit turns them on); every streams API the suite uses is stable in 4.4.
 */
final class Servers implements AutoCloseable {
    /** Both servers report this cluster id (kcoord's {@code cluster.id}, Kafka's meta.properties). */
    static final String CLUSTER_ID = "ZGlmZi1zdWl0ZS1jbHVzdA";

    final String name;
    final KafkaRaftServer kafka;
    final Path kafkaDir;
    final int kafkaPort;
    final Kcoord kcoord;
    final Map<String, String> settings;

    private Servers(String name, KafkaRaftServer kafka, Path kafkaDir, int kafkaPort, Kcoord kcoord,
            Map<String, String> settings) {
        this.name = name;
        this.kafka = kafka;
        this.kafkaDir = kafkaDir;
        this.kafkaPort = kafkaPort;
        this.kcoord = kcoord;
        this.settings = settings;
    }

    String kafkaBootstrap() {
        return "127.0.0.1:" + kafkaPort;
    }

    String kcoordBootstrap() {
        return kcoord.bootstrap();
    }

    /**
     * Starts both with {@code settings} (Kafka key names; kcoord accepts them) on top of the
     * common ones below.
     */
    static Servers start(String name, Map<String, String> settings) throws Exception {
        Map<String, String> common = new LinkedHashMap<>();
        common.put("num.partitions", "1");
        common.put("auto.create.topics.enable", "false");
        common.putAll(settings);

        int brokerPort = freePort();
        int controllerPort = freePort();
        Path dir = Files.createTempDirectory("kafka-diff-" + name);
        CompletableFuture<KafkaRaftServer> kafka = CompletableFuture.supplyAsync(() -> {
            try {
                return startKafka(common, brokerPort, controllerPort, dir);
            } catch (Exception e) {
                throw new RuntimeException("Kafka did not start", e);
            }
        });
        List<String> lines = new ArrayList<>();
        lines.add("node.id=0"); // Kafka's test kit numbers its combined node 0
        lines.add("cluster.id=" + CLUSTER_ID);
        common.forEach((k, v) -> lines.add(k + "=" + v));
        Kcoord kcoord = Kcoord.start("diff-" + name, lines.toArray(String[]::new));
        try {
            return new Servers(name, kafka.join(), dir, brokerPort, kcoord, common);
        } catch (RuntimeException e) {
            kcoord.close();
            throw e;
        }
    }

    private static KafkaRaftServer startKafka(Map<String, String> settings, int brokerPort, int controllerPort,
            Path dir) throws Exception {
        Map<String, Object> props = new LinkedHashMap<>();
        props.put("process.roles", "broker,controller");
        props.put("node.id", "0");
        props.put("listeners", "PLAINTEXT://127.0.0.1:" + brokerPort + ",CONTROLLER://127.0.0.1:" + controllerPort);
        props.put("advertised.listeners", "PLAINTEXT://127.0.0.1:" + brokerPort);
        props.put("controller.listener.names", "CONTROLLER");
        props.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
        props.put("inter.broker.listener.name", "PLAINTEXT");
        props.put("controller.quorum.voters", "0@127.0.0.1:" + controllerPort);
        props.put("log.dirs", dir.toString());
        props.put("unstable.api.versions.enable", "false");
        props.put("unstable.feature.versions.enable", "false");
        props.put("offsets.topic.replication.factor", "1");
        props.put("transaction.state.log.replication.factor", "1");
        props.put("transaction.state.log.min.isr", "1");
        props.put("share.coordinator.state.topic.replication.factor", "1");
        props.put("share.coordinator.state.topic.min.isr", "1");
        props.put("group.initial.rebalance.delay.ms", "0");
        props.put("log.cleaner.dedupe.buffer.size", "2097152");
        props.putAll(settings);
        KafkaConfig config = new KafkaConfig(props, false);

        // What `kafka-storage.sh format` does, at the production metadata.version.
        new Formatter()
                .setPrintStream(new PrintStream(OutputStream.nullOutputStream()))
                .setNodeId(0)
                .setClusterId(CLUSTER_ID)
                .setDirectories(List.of(dir.toString()))
                .setMetadataLogDirectory(dir.toString())
                .setControllerListenerName("CONTROLLER")
                .setReleaseVersion(MetadataVersion.LATEST_PRODUCTION)
                .setSupportedFeatures(Feature.PRODUCTION_FEATURES)
                .setUnstableFeatureVersionsEnabled(false)
                .run();
        KafkaRaftServer server = new KafkaRaftServer(config, Time.SYSTEM);
        server.startup();
        return server;
    }

    static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }

    @Override
    public void close() throws Exception {
        try {
            kcoord.close();
        } finally {
            kafka.shutdown();
            kafka.awaitShutdown();
            Utils.delete(kafkaDir.toFile());
        }
    }
}
