package io.kcoord.interop;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import io.kcoord.interop.diff.WireClient;
import kafka.server.KafkaRaftServer;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.MetadataRequestData;
import org.apache.kafka.common.message.MetadataResponseData;
import org.apache.kafka.common.requests.MetadataRequest;
import org.apache.kafka.common.requests.MetadataResponse;

/**
 * A real Apache Kafka 4.4 cluster of three combined broker and controller nodes (a three-voter
 * KRaft quorum) on loopback, each started as {@link KafkaBroker} starts one. One per JVM
 * ({@link #shared}), started on first use and stopped by a shutdown hook, for the tests that
 * put kcoord in front of a cluster.
 */
public final class KafkaCluster {
    private static final int NODES = 3;
    private static KafkaCluster shared;

    private final List<KafkaRaftServer> servers;
    private final String bootstrap;

    private KafkaCluster(List<KafkaRaftServer> servers, String bootstrap) {
        this.servers = servers;
        this.bootstrap = bootstrap;
    }

    /** The JVM's cluster, started on the first call. */
    public static synchronized KafkaCluster shared() throws Exception {
        if (shared == null) {
            shared = start();
            KafkaCluster cluster = shared;
            Runtime.getRuntime().addShutdownHook(new Thread(cluster::stop, "kafka-cluster-stop"));
        }
        return shared;
    }

    /** host:port of every broker, for {@code bootstrap.servers}. */
    public String bootstrap() {
        return bootstrap;
    }

    /**
     * Creates {@code topics} in the cluster and waits until every broker's metadata has them: a
     * topic the controller created reaches each broker a little later, and a client asking a
     * broker that has not caught up (a Kafka Streams global store asking for its partitions,
     * through kcoord's turn-by-turn spread over the brokers) is told it does not exist.
     */
    public void createTopics(List<NewTopic> topics) throws Exception {
        try (Admin admin = Admin.create(adminProps())) {
            admin.createTopics(topics).all().get(60, TimeUnit.SECONDS);
        }
        List<String> names = topics.stream().map(NewTopic::name).toList();
        for (String broker : bootstrap.split(",")) {
            try (WireClient wire = new WireClient(broker, "kafka-cluster-topics")) {
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (!knowsAll(wire, topics, names)) {
                    if (System.nanoTime() > deadline) {
                        throw new IllegalStateException("broker " + broker + " did not learn " + names);
                    }
                    Thread.sleep(50);
                }
            }
        }
    }

    private static boolean knowsAll(WireClient wire, List<NewTopic> topics, List<String> names)
            throws Exception {
        MetadataRequest.Builder ask = new MetadataRequest.Builder(
                new MetadataRequestData().setAllowAutoTopicCreation(false).setTopics(names.stream()
                        .map(n -> new MetadataRequestData.MetadataRequestTopic().setName(n)).toList()));
        MetadataResponse answer = (MetadataResponse) wire.send(ask, (short) 12);
        Map<String, Integer> known = new HashMap<>();
        for (MetadataResponseData.MetadataResponseTopic t : answer.data().topics()) {
            if (t.errorCode() == 0) known.put(t.name(), t.partitions().size());
        }
        return topics.stream().allMatch(t -> Integer.valueOf(t.numPartitions()).equals(known.get(t.name())));
    }

    private Properties adminProps() {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        return props;
    }

    private static KafkaCluster start() throws Exception {
        int[] brokerPorts = new int[NODES];
        int[] controllerPorts = new int[NODES];
        List<String> voters = new ArrayList<>();
        List<String> brokers = new ArrayList<>();
        for (int i = 0; i < NODES; i++) {
            brokerPorts[i] = KafkaBroker.freePort();
            controllerPorts[i] = KafkaBroker.freePort();
            voters.add(i + "@127.0.0.1:" + controllerPorts[i]);
            brokers.add("127.0.0.1:" + brokerPorts[i]);
        }
        String clusterId = Uuid.randomUuid().toString();
        Map<String, String> settings = Map.of(
                "offsets.topic.replication.factor", "3",
                "transaction.state.log.replication.factor", "3",
                "transaction.state.log.min.isr", "2",
                "default.replication.factor", "3",
                "min.insync.replicas", "2");
        Path root = Clients.tempDir("kcoord-kafka-cluster");
        // Each node's start waits for the quorum, which needs the others: start them together.
        ExecutorService pool = Executors.newFixedThreadPool(NODES);
        List<Future<KafkaRaftServer>> starting = new ArrayList<>();
        for (int i = 0; i < NODES; i++) {
            int node = i;
            Path dir = Files.createDirectories(root.resolve("node-" + node));
            starting.add(pool.submit(() -> KafkaBroker.start(settings, node, brokerPorts[node],
                    controllerPorts[node], String.join(",", voters), dir, clusterId)));
        }
        List<KafkaRaftServer> servers = new ArrayList<>();
        for (Future<KafkaRaftServer> server : starting) {
            servers.add(server.get(180, TimeUnit.SECONDS));
        }
        pool.shutdown();
        KafkaCluster cluster = new KafkaCluster(servers, String.join(",", brokers));
        cluster.awaitBrokers();
        return cluster;
    }

    /** Waits until every broker is registered and unfenced: then the cluster takes topics of RF 3. */
    private void awaitBrokers() throws Exception {
        try (Admin admin = Admin.create(adminProps())) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            while (admin.describeCluster().nodes().get(30, TimeUnit.SECONDS).size() < NODES) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("the Kafka cluster did not get " + NODES + " brokers");
                }
                Thread.sleep(100);
            }
        }
    }

    /**
     * Stops every node at once: one after the other, each broker's controlled shutdown would wait
     * for a quorum the nodes before it have already left.
     */
    private void stop() {
        List<Thread> stopping = new ArrayList<>();
        for (KafkaRaftServer server : servers) {
            Thread t = new Thread(() -> {
                try {
                    server.shutdown();
                    server.awaitShutdown();
                } catch (RuntimeException e) {
                    // going down anyway
                }
            }, "kafka-node-stop");
            t.start();
            stopping.add(t);
        }
        for (Thread t : stopping) {
            try {
                t.join(TimeUnit.SECONDS.toMillis(25));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }
}
