package io.kcoord.interop.diff;

import io.kcoord.interop.KafkaBroker;
import io.kcoord.interop.Kcoord;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import kafka.server.KafkaRaftServer;
import org.apache.kafka.common.utils.Utils;

/**
 * A pair of servers with the same group.streams.* settings: a single-node KRaft Apache Kafka
 * 4.4 (combined broker and controller, from the kafka_2.13 artifact) and kcoord.
 *
 * <p>The Kafka node is {@link KafkaBroker}'s: production-like, as {@code kafka-storage.sh
 * format} and {@code kafka-server-start.sh} start it; every streams API the suite uses is stable
 * in 4.4.
 */
final class Servers implements AutoCloseable {
    /** Both servers report this cluster id (kcoord's {@code cluster.id}, Kafka's meta.properties). */
    static final String CLUSTER_ID = "ZGlmZi1zdWl0ZS1jbHVzdA";

    final String name;
    final KafkaRaftServer kafka;
    final Path kafkaDir;
    final int kafkaPort;
    final int kafkaControllerPort;
    final Kcoord kcoord;
    final Map<String, String> settings;

    private Servers(String name, KafkaRaftServer kafka, Path kafkaDir, int kafkaPort, int kafkaControllerPort,
            Kcoord kcoord, Map<String, String> settings) {
        this.name = name;
        this.kafka = kafka;
        this.kafkaDir = kafkaDir;
        this.kafkaPort = kafkaPort;
        this.kafkaControllerPort = kafkaControllerPort;
        this.kcoord = kcoord;
        this.settings = settings;
    }

    String kafkaBootstrap() {
        return "127.0.0.1:" + kafkaPort;
    }

    String kcoordBootstrap() {
        return kcoord.bootstrap();
    }

    /** host:port of Kafka's CONTROLLER listener. */
    String kafkaController() {
        return "127.0.0.1:" + kafkaControllerPort;
    }

    /** host:port of kcoord's controller listener. */
    String kcoordController() {
        return kcoord.controller();
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
            return new Servers(name, kafka.join(), dir, brokerPort, controllerPort, kcoord, common);
        } catch (RuntimeException e) {
            kcoord.close();
            throw e;
        }
    }

    private static KafkaRaftServer startKafka(Map<String, String> settings, int brokerPort, int controllerPort,
            Path dir) {
        return KafkaBroker.start(settings, brokerPort, controllerPort, dir, CLUSTER_ID);
    }

    static int freePort() throws IOException {
        return KafkaBroker.freePort();
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
