package io.kcoord.interop;

import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.metadata.storage.Formatter;
import org.apache.kafka.server.common.Feature;
import org.apache.kafka.server.common.MetadataVersion;

/**
 * A single-node KRaft Apache Kafka 4.4 (combined broker and controller, from the kafka_2.13
 * artifact), started as {@code kafka-storage.sh format} and {@code kafka-server-start.sh} would:
 * {@link Formatter}, then {@link KafkaRaftServer}. (Kafka's test kit, KafkaClusterTestKit, needs
 * kafka-clients' test fixtures for its SSL set-up, which Maven Central does not serve for
 * 4.4.0.) Production-like: {@code MetadataVersion.LATEST_PRODUCTION} with every production
 * feature at its default level for it (so {@code streams.version=1}), both
 * {@code unstable.*.enable} keys false.
 */
public final class KafkaBroker {
    private KafkaBroker() {}

    /** Formats {@code dir} and starts the node; {@code settings} go on top of the defaults here. */
    public static KafkaRaftServer start(Map<String, String> settings, int brokerPort, int controllerPort,
            Path dir, String clusterId) {
        return start(settings, 0, brokerPort, controllerPort, "0@127.0.0.1:" + controllerPort, dir, clusterId);
    }

    /**
     * Node {@code nodeId} of a cluster whose controller quorum is {@code voters}
     * ({@code controller.quorum.voters}); the other nodes are started the same way.
     */
    public static KafkaRaftServer start(Map<String, String> settings, int nodeId, int brokerPort,
            int controllerPort, String voters, Path dir, String clusterId) {
        Map<String, Object> props = new LinkedHashMap<>();
        props.put("process.roles", "broker,controller");
        props.put("node.id", Integer.toString(nodeId));
        props.put("listeners", "PLAINTEXT://127.0.0.1:" + brokerPort + ",CONTROLLER://127.0.0.1:" + controllerPort);
        props.put("advertised.listeners", "PLAINTEXT://127.0.0.1:" + brokerPort);
        props.put("controller.listener.names", "CONTROLLER");
        props.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
        props.put("inter.broker.listener.name", "PLAINTEXT");
        props.put("controller.quorum.voters", voters);
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
        try {
            new Formatter()
                    .setPrintStream(new PrintStream(OutputStream.nullOutputStream()))
                    .setNodeId(nodeId)
                    .setClusterId(clusterId)
                    .setDirectories(List.of(dir.toString()))
                    .setMetadataLogDirectory(dir.toString())
                    .setControllerListenerName("CONTROLLER")
                    .setReleaseVersion(MetadataVersion.LATEST_PRODUCTION)
                    .setSupportedFeatures(Feature.PRODUCTION_FEATURES)
                    .setUnstableFeatureVersionsEnabled(false)
                    .run();
        } catch (Exception e) {
            throw new IllegalStateException("formatting " + dir + " failed", e);
        }
        KafkaRaftServer server = new KafkaRaftServer(config, Time.SYSTEM);
        server.startup();
        return server;
    }

    public static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }
}
