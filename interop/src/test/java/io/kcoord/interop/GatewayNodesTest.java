package io.kcoord.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Produced;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Two kcoord nodes in front of a real Apache Kafka 4.4 cluster ({@link KafkaCluster}), sharing
 * the coordinator shards (docs/gateway.md, "Several kcoord nodes"): a stateful Kafka Streams
 * app bootstraps from the node serving its group, that node is killed with SIGKILL, and the app
 * goes on through the other, which it learnt from the first node's metadata; a node started
 * again (with nothing on its disk) takes shards back.
 */
class GatewayNodesTest {
    private static final String APP = "gw-nodes-app";
    private static final String INPUT = "gw-nodes-words";
    private static final String OUTPUT = "gw-nodes-counts";
    private static final List<String> WORDS = List.of("apple", "banana", "cherry");
    private static final int SHARDS = 8;

    private final List<Kcoord> nodes = new ArrayList<>();
    private final List<Integer> portStarts = new ArrayList<>();

    @AfterEach
    void stop() throws Exception {
        for (Kcoord node : nodes) node.close();
    }

    /** Node {@code index} (its own port range; the test's own coordinator log topic). */
    private Kcoord startNode(KafkaCluster cluster, int index) throws Exception {
        List<String> config = new ArrayList<>(Kcoord.fastStreamsGroups());
        config.add("group.streams.topology.description.class=memory");
        config.add("upstream.bootstrap.servers=" + cluster.bootstrap());
        config.add("gateway.broker.port.start=" + portStarts.get(index));
        config.add("gateway.coordinator.log.topic=gw-nodes-coordinator-log");
        config.add("gateway.node.session.timeout.ms=6000");
        config.add("offsets.topic.num.partitions=" + SHARDS);
        return Kcoord.start("gateway-node-" + index, config.toArray(String[]::new));
    }

    private static final String PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule";
    private static final String SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule";

    /**
     * A node whose SASL listener takes PLAIN (the JAAS users {@code admin} and {@code node}) and
     * SCRAM-SHA-512 (kcoord's own users, kept in the cluster), with its own topics so that it
     * shares nothing with the other test's nodes.
     */
    private Kcoord startScramNode(KafkaCluster cluster, String name) throws Exception {
        List<String> config = new ArrayList<>(List.of(
                "listeners=SASL_PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
                "listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
                "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512",
                "listener.name.sasl_plaintext.plain.sasl.jaas.config=" + PLAIN_MODULE
                        + " required user_admin=\"admin-secret\" user_node=\"node-secret\";",
                "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=" + SCRAM_MODULE + " required;",
                "gateway.node.principals=User:node",
                "upstream.bootstrap.servers=" + cluster.bootstrap(),
                "gateway.broker.port.start=" + GatewayTest.freePortRange(3),
                "gateway.coordinator.log.topic=gw-scram-coordinator-log",
                "gateway.credentials.topic=gw-scram-credentials"));
        sasl("PLAIN", "node", "node-secret").forEach((k, v) -> config.add("gateway.node.client." + k + "=" + v));
        Kcoord node = Kcoord.start("gateway-scram-" + name, config.toArray(String[]::new));
        nodes.add(node);
        return node;
    }

    private static Properties sasl(String mechanism, String user, String password) {
        String module = mechanism.equals("PLAIN") ? PLAIN_MODULE : SCRAM_MODULE;
        Properties props = new Properties();
        props.put("security.protocol", "SASL_PLAINTEXT");
        props.put("sasl.mechanism", mechanism);
        props.put("sasl.jaas.config", module + " required username=\"" + user + "\" password=\"" + password + "\";");
        return props;
    }

    /** Whether {@code user} logs in to {@code node} with SCRAM-SHA-512 (Kafka's admin client). */
    private static boolean logsIn(Kcoord node, String user, String password) {
        try (Admin admin = Clients.admin(node.listener("SASL_PLAINTEXT"), sasl("SCRAM-SHA-512", user, password))) {
            admin.listTopics().names().get(30, TimeUnit.SECONDS);
            return true;
        } catch (ExecutionException e) {
            if (e.getCause() instanceof SaslAuthenticationException) return false;
            throw new AssertionError(e);
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    /**
     * kcoord's own SCRAM users ({@code gateway.authentication=local}) are kept in the cluster, not
     * on a node (docs/gateway.md, "No local state"): one created with {@code kafka-configs} through
     * one node logs in through the other and through a node started later, and one deleted through
     * a node is refused by every node.
     */
    @Test
    void kcoords_own_scram_users_made_through_one_node_log_in_through_every_node() throws Exception {
        KafkaCluster cluster = KafkaCluster.shared();
        Kcoord a = startScramNode(cluster, "a");
        Kcoord b = startScramNode(cluster, "b");
        Path adminConfig = Clients.tempDir("gw-scram-admin").resolve("admin.properties");
        StringBuilder text = new StringBuilder();
        sasl("PLAIN", "admin", "admin-secret").forEach((k, v) -> text.append(k).append('=').append(v).append('\n'));
        Files.writeString(adminConfig, text, StandardCharsets.UTF_8);

        Tools.Run created = Tools.kafkaConfigs("--bootstrap-server", a.listener("SASL_PLAINTEXT"), "--command-config",
                adminConfig.toString(), "--alter", "--add-config", "SCRAM-SHA-512=[password=dana-secret]",
                "--entity-type", "users", "--entity-name", "dana");
        assertEquals("Completed updating config for user dana.\n", created.stdout(), created + "\n" + a.logTail());
        assertTrue(logsIn(a, "dana", "dana-secret"), "the node that created dana knows her at once");
        assertFalse(logsIn(a, "dana", "wrong"));
        Clients.await(() -> logsIn(b, "dana", "dana-secret"), Duration.ofSeconds(30),
                () -> "dana never logged in through the other node\n" + b.logTail());
        Kcoord later = startScramNode(cluster, "later");
        assertTrue(logsIn(later, "dana", "dana-secret"), "a node started later knows dana before it serves");
        Tools.Run described = Tools.kafkaConfigs("--bootstrap-server", b.listener("SASL_PLAINTEXT"),
                "--command-config", adminConfig.toString(), "--describe", "--entity-type", "users",
                "--entity-name", "dana");
        assertTrue(described.stdout().contains("SCRAM-SHA-512=iterations=4096"), described.toString());

        Tools.Run deleted = Tools.kafkaConfigs("--bootstrap-server", b.listener("SASL_PLAINTEXT"), "--command-config",
                adminConfig.toString(), "--alter", "--delete-config", "SCRAM-SHA-512", "--entity-type", "users",
                "--entity-name", "dana");
        assertEquals("Completed updating config for user dana.\n", deleted.stdout(), deleted.toString());
        for (Kcoord node : List.of(a, later)) {
            Clients.await(() -> !logsIn(node, "dana", "dana-secret"), Duration.ofSeconds(30),
                    () -> "dana still logs in after her deletion\n" + node.logTail());
        }
    }

    private static Topology wordCount() {
        StreamsBuilder builder = new StreamsBuilder();
        builder.<String, String>stream(INPUT)
                .groupBy((key, word) -> word)
                .count()
                .toStream()
                .to(OUTPUT, Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }

    /** Each word {@code perWord} more times, written to the cluster directly. */
    private static void produceWords(KafkaCluster cluster, int round, int perWord) throws Exception {
        List<Map.Entry<String, String>> records = new ArrayList<>();
        for (int i = 0; i < perWord; i++) {
            for (String word : WORDS) records.add(Map.entry("r" + round + "-" + i + word, word));
        }
        Clients.produce(cluster.bootstrap(), INPUT, records);
    }

    /** Waits until the output, read directly from the cluster, counts each word {@code count} times. */
    private void awaitCounts(KafkaCluster cluster, long count) throws Exception {
        Map<String, Long> last = new HashMap<>();
        Clients.await(() -> {
            for (var r : Clients.readAllLongs(cluster.bootstrap(), OUTPUT)) last.put(r.key(), r.value());
            return WORDS.stream().allMatch(w -> Long.valueOf(count).equals(last.get(w)));
        }, Duration.ofSeconds(120), () -> "counts " + last + ", expected " + count + " each; nodes:\n"
                + nodes.stream().map(Kcoord::logTail).reduce("", String::concat));
        assertTrue(last.values().stream().allMatch(c -> c <= count), "no word counted twice: " + last);
    }

    /**
     * The last assignment of the nodes' group in {@code node}'s log ({@code nodes=N owned=[...]}),
     * as the number of nodes and the shards owned; null before the first.
     */
    static Map.Entry<Integer, List<Integer>> lastAssignment(Kcoord node) throws Exception {
        Map.Entry<Integer, List<Integer>> last = null;
        java.util.regex.Pattern pattern = java.util.regex.Pattern.compile("nodes=([0-9]+) owned=\\[([0-9, ]*)\\]");
        for (String line : java.nio.file.Files.readAllLines(node.log())) {
            if (!line.contains("assigned the coordinator shards")) continue;
            java.util.regex.Matcher m = pattern.matcher(line);
            if (!m.find()) continue;
            List<Integer> owned = new ArrayList<>();
            for (String s : m.group(2).split(",")) {
                if (!s.isBlank()) owned.add(Integer.parseInt(s.trim()));
            }
            last = Map.entry(Integer.parseInt(m.group(1)), owned);
        }
        return last;
    }

    /**
     * The index of the one of {@code nodes} serving {@code group}'s shard once every node's last
     * assignment names them all (60 s at most). Shards are Kafka's
     * {@code abs(hashCode) % offsets.topic.num.partitions}, masked as kcoord masks it.
     */
    static int servingNode(List<Kcoord> nodes, String group, int shards) throws Exception {
        int shard = (group.hashCode() & 0x7fffffff) % shards;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < deadline) {
            List<Integer> serving = new ArrayList<>();
            boolean allKnown = true;
            for (int i = 0; i < nodes.size(); i++) {
                Map.Entry<Integer, List<Integer>> last = lastAssignment(nodes.get(i));
                allKnown &= last != null && last.getKey() == nodes.size();
                if (last != null && last.getValue().contains(shard)) serving.add(i);
            }
            if (allKnown && serving.size() == 1) return serving.get(0);
            Thread.sleep(100);
        }
        throw new AssertionError("no single node serves " + group);
    }

    @Test
    void the_app_goes_on_through_the_other_node_when_the_node_serving_it_is_killed() throws Exception {
        KafkaCluster cluster = KafkaCluster.shared();
        for (int i = 0; i < 2; i++) portStarts.add(GatewayTest.freePortRange(3));
        nodes.add(startNode(cluster, 0));
        nodes.add(startNode(cluster, 1));
        cluster.createTopics(List.of(new NewTopic(INPUT, 2, (short) 3), new NewTopic(OUTPUT, 2, (short) 3)));
        produceWords(cluster, 0, 100);
        int owner = servingNode(nodes, APP, SHARDS);
        int other = 1 - owner;

        // The app knows only the node that serves its group: it learns the other from that
        // node's metadata (the upstream brokers are spread over both), and that is how it goes
        // on when the node dies, as a Kafka client goes on when the broker it bootstrapped
        // from dies (rebootstrapping would find only the dead node here).
        Properties props = Clients.streamsProps(nodes.get(owner).bootstrap(), APP, Clients.tempDir(APP));
        props.put(org.apache.kafka.streams.StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        KafkaStreams streams = Clients.startRunning(wordCount(), props, Duration.ofSeconds(120));
        try {
            awaitCounts(cluster, 100);
            nodes.get(owner).kill();
            produceWords(cluster, 1, 100);
            awaitCounts(cluster, 200);
            try (Admin admin = Clients.admin(nodes.get(other).bootstrap())) {
                StreamsGroupDescription group = admin.describeStreamsGroups(List.of(APP))
                        .describedGroups().get(APP).get(30, TimeUnit.SECONDS);
                assertEquals(1, group.members().size(), "members of " + group);
            }

            // Started again with nothing of its own, the node takes shards back (its own log
            // says which), and the app runs on.
            nodes.set(owner, startNode(cluster, owner));
            Clients.await(() -> {
                try {
                    for (String line : java.nio.file.Files.readAllLines(nodes.get(owner).log())) {
                        if (line.contains("assigned the coordinator shards") && !line.contains("owned=[]")) {
                            return true;
                        }
                    }
                    return false;
                } catch (java.io.IOException e) {
                    return false;
                }
            }, Duration.ofSeconds(60), () -> "the restarted node never got a shard");
            produceWords(cluster, 2, 100);
            awaitCounts(cluster, 300);
        } finally {
            streams.close(Duration.ofSeconds(30));
        }
    }
}
