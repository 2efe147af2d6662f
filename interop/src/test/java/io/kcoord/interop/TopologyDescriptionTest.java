package io.kcoord.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeStreamsGroupsOptions;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.admin.StreamsGroupTopologyDescriptionStatus;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.tools.streams.TopologyDescriptionFormatter;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * KIP-1331 with real Kafka Streams 4.4 apps of five shapes: each pushes its topology through key
 * 93, Kafka's Admin client reads it back node for node, kcoord's {@code kafka-streams-groups
 * --describe --topology} prints what the app's own {@code topology.describe()} prints, and Kafka
 * 4.4's own tool prints it in its format.
 */
class TopologyDescriptionTest {
    private static Kcoord kcoord;
    private static final Map<Shapes.Shape, KafkaStreams> APPS = new LinkedHashMap<>();

    @BeforeAll
    static void startAppsOfEveryShape() throws Exception {
        List<String> config = new ArrayList<>(Kcoord.fastStreamsGroups());
        config.add("group.streams.topology.description.class=memory");
        kcoord = Kcoord.start("topology-shapes", config.toArray(String[]::new));
        List<String> topics = new ArrayList<>();
        for (Shapes.Shape shape : Shapes.all()) topics.addAll(shape.inputTopics());
        Clients.createTopics(kcoord.bootstrap(), 2, topics.toArray(String[]::new));
        for (Shapes.Shape shape : Shapes.all()) {
            KafkaStreams app = new KafkaStreams(shape.topology(), Clients.streamsProps(
                    kcoord.bootstrap(), group(shape), Clients.tempDir(shape.name())));
            app.start();
            APPS.put(shape, app);
        }
        for (KafkaStreams app : APPS.values()) {
            Clients.awaitState(app, KafkaStreams.State.RUNNING, Duration.ofSeconds(90));
        }
    }

    @AfterAll
    static void stop() throws Exception {
        Clients.closeAll(APPS.values());
        if (kcoord != null) kcoord.close();
    }

    private static String group(Shapes.Shape shape) {
        return "shape-" + shape.name();
    }

    /** The group's description once the app's push has been stored. */
    private static StreamsGroupDescription storedDescription(Admin admin, String group)
            throws Exception {
        DescribeStreamsGroupsOptions options =
                new DescribeStreamsGroupsOptions().includeTopologyDescription(true);
        StreamsGroupDescription[] last = new StreamsGroupDescription[1];
        Clients.await(() -> {
            try {
                last[0] = admin.describeStreamsGroups(List.of(group), options)
                        .describedGroups().get(group).get(30, TimeUnit.SECONDS);
                return last[0].topologyDescriptionStatus()
                        == StreamsGroupTopologyDescriptionStatus.AVAILABLE;
            } catch (Exception e) {
                throw new AssertionError(e);
            }
        }, Duration.ofSeconds(60), () -> group + ": " + last[0]);
        return last[0];
    }

    @Test
    void admin_client_reads_back_each_apps_own_topology_node_by_node() throws Exception {
        try (Admin admin = Clients.admin(kcoord.bootstrap())) {
            for (Shapes.Shape shape : APPS.keySet()) {
                StreamsGroupDescription described = storedDescription(admin, group(shape));
                // The app pushes its internal topics by their full names; describe() omits the
                // application id prefix.
                assertEquals(TopologyText.canonical(shape.topology().describe()),
                        TopologyText.canonical(described.topologyDescription().orElseThrow(),
                                group(shape) + "-"),
                        shape.name());
            }
        }
    }

    @Test
    void kcoord_cli_prints_what_topology_describe_prints() throws Exception {
        try (Admin admin = Clients.admin(kcoord.bootstrap())) {
            for (Shapes.Shape shape : APPS.keySet()) {
                storedDescription(admin, group(shape));
                Tools.Run run = Tools.kcoordStreamsGroups("--bootstrap-server", kcoord.bootstrap(),
                        "--describe", "--topology", "--group", group(shape));
                assertEquals(0, run.exitCode(), run.toString());
                String expected = TopologyText.normalise(shape.topology().describe().toString());
                String printed = TopologyText.normalise(run.stdout()).replace(group(shape) + "-", "");
                assertEquals(expected, printed, shape.name());
            }
        }
    }

    @Test
    void kafkas_own_tool_prints_the_stored_topology_in_its_format() throws Exception {
        try (Admin admin = Clients.admin(kcoord.bootstrap())) {
            for (Shapes.Shape shape : APPS.keySet()) {
                StreamsGroupDescription described = storedDescription(admin, group(shape));
                Tools.Run run = Tools.kafkaStreamsGroups("--bootstrap-server", kcoord.bootstrap(),
                        "--describe", "--topology", "--group", group(shape));
                assertEquals(0, run.exitCode(), run.toString());
                String formatted = TopologyDescriptionFormatter.format(
                        described.topologyDescription().orElseThrow());
                assertTrue(run.stdout().contains(formatted), shape.name() + ":\n" + run);
            }
        }
    }
}
