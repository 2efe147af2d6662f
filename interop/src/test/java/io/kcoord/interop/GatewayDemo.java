package io.kcoord.interop;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;

/**
 * {@code scripts/gateway-demo}: a three-broker Apache Kafka 4.4 cluster ({@link KafkaCluster})
 * with two kcoord nodes in front of it, on loopback, until Ctrl-C. With {@code --check} it
 * creates a topic through one node, writes to it through the other, reads it back from the
 * cluster, and exits: what the script's smoke test runs.
 */
public final class GatewayDemo {
    private GatewayDemo() {}

    public static void main(String[] args) throws Exception {
        boolean check = List.of(args).contains("--check");
        KafkaCluster cluster = KafkaCluster.shared();
        List<Kcoord> nodes = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            nodes.add(Kcoord.start("demo-node-" + i,
                    "upstream.bootstrap.servers=" + cluster.bootstrap(),
                    "gateway.broker.port.start=" + GatewayTest.freePortRange(3),
                    "group.streams.topology.description.class=memory"));
        }
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            for (Kcoord node : nodes) {
                try {
                    node.close();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }, "demo-nodes-stop"));
        String both = nodes.get(0).bootstrap() + "," + nodes.get(1).bootstrap();
        System.out.println("Apache Kafka 4.4 cluster (3 brokers): " + cluster.bootstrap());
        for (int i = 0; i < nodes.size(); i++) {
            System.out.println("kcoord node " + i + ": " + nodes.get(i).bootstrap()
                    + " (log: " + nodes.get(i).log() + ")");
        }
        System.out.println("Point Kafka Streams apps and Kafka's tools at: " + both);
        if (check) {
            smokeCheck(cluster, nodes);
            System.out.println("gateway demo check: ok");
            System.exit(0);
        }
        System.out.println("Ctrl-C stops the cluster and both nodes.");
        new CountDownLatch(1).await();
    }

    private static void smokeCheck(KafkaCluster cluster, List<Kcoord> nodes) throws Exception {
        try (Admin admin = Clients.admin(nodes.get(0).bootstrap())) {
            admin.createTopics(List.of(new NewTopic("demo-check", 1, (short) 3))).all().get(60, TimeUnit.SECONDS);
        }
        Clients.produce(nodes.get(1).bootstrap(), "demo-check", List.of(Map.entry("k", "through kcoord")));
        var read = Clients.consume(cluster.bootstrap(), "demo-check", 1, java.time.Duration.ofSeconds(60));
        if (read.size() != 1 || !"through kcoord".equals(read.get(0).value())) {
            throw new IllegalStateException("the cluster holds " + read + ", not the record written through kcoord");
        }
    }
}
