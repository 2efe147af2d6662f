package io.kcoord.interop;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.Uuid;

/**
 * An Apache Kafka 3.9 broker (a KRaft node that is broker and controller), a cluster without
 * streams groups, run in a JVM of its own on the 3.9 jars that {@code interop/kafka-3.9/pom.xml}
 * names: Maven copies them (with their dependencies) on first use, so the 4.4 classes of the
 * test JVM never meet them.
 */
public final class Kafka39Broker implements AutoCloseable {
    private final Process process;
    private final String bootstrap;
    private final Path log;

    private Kafka39Broker(Process process, String bootstrap, Path log) {
        this.process = process;
        this.bootstrap = bootstrap;
        this.log = log;
    }

    public String bootstrap() {
        return bootstrap;
    }

    /** Formats a log directory and starts the broker; returns once it answers Admin requests. */
    public static Kafka39Broker start() throws Exception {
        String classpath = jars().resolve("*").toString();
        int brokerPort = KafkaBroker.freePort();
        int controllerPort = KafkaBroker.freePort();
        Path dir = Clients.tempDir("kafka-3.9");
        Properties config = new Properties();
        config.put("process.roles", "broker,controller");
        config.put("node.id", "1");
        config.put("controller.quorum.voters", "1@127.0.0.1:" + controllerPort);
        config.put("listeners", "PLAINTEXT://127.0.0.1:" + brokerPort + ",CONTROLLER://127.0.0.1:" + controllerPort);
        config.put("advertised.listeners", "PLAINTEXT://127.0.0.1:" + brokerPort);
        config.put("controller.listener.names", "CONTROLLER");
        config.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
        config.put("log.dirs", dir.resolve("data").toString());
        config.put("offsets.topic.replication.factor", "1");
        config.put("transaction.state.log.replication.factor", "1");
        config.put("transaction.state.log.min.isr", "1");
        config.put("group.initial.rebalance.delay.ms", "0");
        Path properties = dir.resolve("server.properties");
        try (var out = Files.newOutputStream(properties)) {
            config.store(out, "Kafka 3.9 for kcoord's interop tests");
        }
        Tools.Run formatted = Tools.run(List.of(java(), "-cp", classpath, "kafka.tools.StorageTool", "format",
                "-t", Uuid.randomUuid().toString(), "-c", properties.toString()));
        if (formatted.exitCode() != 0) throw new IllegalStateException("kafka-storage format: " + formatted);
        Path log = dir.resolve("broker.log");
        Process process = new ProcessBuilder(java(), "-cp", classpath, "kafka.Kafka", properties.toString())
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
        Kafka39Broker broker = new Kafka39Broker(process, "127.0.0.1:" + brokerPort, log);
        try {
            broker.awaitReady(brokerPort);
        } catch (Exception e) {
            broker.close();
            throw e;
        }
        return broker;
    }

    private void awaitReady(int port) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (true) {
            if (!process.isAlive()) throw new IllegalStateException("Kafka 3.9 exited:\n" + Files.readString(log));
            if (System.nanoTime() > deadline) throw new IllegalStateException("Kafka 3.9 did not start:\n" + Files.readString(log));
            if (accepts(port)) {
                Properties props = new Properties();
                props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
                try (Admin admin = Admin.create(props)) {
                    if (!admin.describeCluster().nodes().get(10, TimeUnit.SECONDS).isEmpty()) return;
                } catch (Exception notYet) {
                    // the broker is still starting
                }
            }
            Thread.sleep(200);
        }
    }

    private static boolean accepts(int port) {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress("127.0.0.1", port), 500);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** The 3.9 jars, copied by Maven from interop/kafka-3.9/pom.xml the first time. */
    private static synchronized Path jars() throws Exception {
        Path pom = Paths.get(System.getProperty("kcoord.root", ".."), "interop", "kafka-3.9", "pom.xml").toAbsolutePath();
        Path libs = pom.getParent().resolve("target").resolve("libs");
        if (Files.isDirectory(libs)) {
            try (var listed = Files.list(libs)) {
                if (listed.anyMatch(p -> p.getFileName().toString().startsWith("kafka_2.13-3.9"))) return libs;
            }
        }
        Tools.Run copied = Tools.run(List.of("mvn", "-q", "-B", "-ntp", "-f", pom.toString(),
                "dependency:copy-dependencies", "-DoutputDirectory=" + libs, "-DincludeScope=runtime"));
        if (copied.exitCode() != 0) throw new IllegalStateException("copying the Kafka 3.9 jars: " + copied);
        return libs;
    }

    private static String java() {
        return Paths.get(System.getProperty("java.home"), "bin", "java").toString();
    }

    /** The broker's output so far, for assertion messages. */
    public String logTail() {
        try {
            List<String> lines = Files.readAllLines(log);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }

    @Override
    public void close() throws InterruptedException {
        process.destroy();
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
        }
    }
}
