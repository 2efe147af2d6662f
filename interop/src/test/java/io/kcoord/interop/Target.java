package io.kcoord.interop;

import java.io.IOException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kafka.server.KafkaRaftServer;
import org.apache.kafka.common.utils.Utils;

/**
 * The server an app test runs against: kcoord (the default) or, with
 * {@code -Dinterop.target=kafka}, a single-node Apache Kafka 4.4 ({@link KafkaBroker}, in this
 * JVM) with the same {@code key=value} settings. A test-only switch, so a test of a feature
 * kcoord does not have yet can be written and checked against Kafka first; the suite runs on
 * kcoord.
 */
public final class Target implements AutoCloseable {
    /** The system property that selects the server: {@code kcoord} (default) or {@code kafka}. */
    public static final String PROPERTY = "interop.target";

    private Kcoord kcoord;
    private final KafkaRaftServer kafka;
    private final Path kafkaDir;
    private final int kafkaPort;

    private Target(Kcoord kcoord, KafkaRaftServer kafka, Path kafkaDir, int kafkaPort) {
        this.kcoord = kcoord;
        this.kafka = kafka;
        this.kafkaDir = kafkaDir;
        this.kafkaPort = kafkaPort;
    }

    /** True when {@code -Dinterop.target=kafka} points the app tests at Kafka 4.4. */
    public static boolean kafkaSelected() {
        String target = System.getProperty(PROPERTY, "kcoord");
        if (!target.equals("kcoord") && !target.equals("kafka")) {
            throw new IllegalArgumentException(PROPERTY + " is kcoord or kafka, not " + target);
        }
        return target.equals("kafka");
    }

    /**
     * Starts the selected server with {@code settings} ({@code key=value}, Kafka's key names;
     * kcoord accepts them). kcoord is started restartable ({@link Kcoord#startRestartable}) on a
     * data directory of its own, so {@link #killAndRestart} works.
     */
    public static Target start(String name, List<String> settings) throws IOException {
        if (!kafkaSelected()) {
            Path data = Clients.tempDir("kcoord-" + name);
            return new Target(Kcoord.startRestartable(name, data, settings.toArray(String[]::new)), null, null, -1);
        }
        Map<String, String> props = new LinkedHashMap<>();
        props.put("num.partitions", "1");
        props.put("auto.create.topics.enable", "false");
        for (String line : settings) {
            int eq = line.indexOf('=');
            if (eq < 0) throw new IllegalArgumentException("not key=value: " + line);
            props.put(line.substring(0, eq).trim(), line.substring(eq + 1).trim());
        }
        Path dir = java.nio.file.Files.createTempDirectory("kafka-" + name);
        int port = KafkaBroker.freePort();
        KafkaRaftServer server = KafkaBroker.start(props, port, KafkaBroker.freePort(), dir,
                "aW50ZXJvcC10YXJnZXQtaw");
        return new Target(null, server, dir, port);
    }

    public boolean isKafka() {
        return kafka != null;
    }

    public String bootstrap() {
        return isKafka() ? "127.0.0.1:" + kafkaPort : kcoord.bootstrap();
    }

    /** The kcoord daemon (null on Kafka). */
    public Kcoord kcoord() {
        return kcoord;
    }

    /** kcoord's stderr so far, for assertion messages ("" on Kafka: its log is this JVM's). */
    public String logTail() {
        return isKafka() ? "" : kcoord.logTail();
    }

    /** kcoord only: SIGKILL, then the binary again on the same ports and data directories. */
    public void killAndRestart() throws IOException, InterruptedException {
        if (isKafka()) throw new UnsupportedOperationException("the in-process Kafka broker is not restarted");
        kcoord = kcoord.killAndRestart();
    }

    @Override
    public void close() throws Exception {
        if (kcoord != null) kcoord.close();
        if (kafka != null) {
            kafka.shutdown();
            kafka.awaitShutdown();
            Utils.delete(kafkaDir.toFile());
        }
    }
}
