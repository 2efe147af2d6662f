package io.kcoord.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeStreamsGroupsOptions;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.admin.StreamsGroupTopologyDescriptionStatus;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.junit.jupiter.api.Test;

/**
 * When a Kafka Streams 4.4 app pushes its topology (key 93) and when it must not:
 * {@code topology.description.push.enabled=false} stores nothing, and a kcoord without a plugin
 * is never pushed to while the app runs unaffected.
 */
class TopologyPushTest {
    /** Logs every request's API name, so a test can tell which RPCs reached the daemon. */
    private static final String REQUEST_LOG = "log.level=info,kcoord_server::dispatch=debug";

    private static StreamsGroupDescription describe(Admin admin, String group) throws Exception {
        return admin.describeStreamsGroups(List.of(group),
                        new DescribeStreamsGroupsOptions().includeTopologyDescription(true))
                .describedGroups().get(group).get(30, TimeUnit.SECONDS);
    }

    private static KafkaStreams startFilterApp(Kcoord kcoord, String group, boolean push)
            throws Exception {
        Properties props = Clients.streamsProps(kcoord.bootstrap(), group, Clients.tempDir(group));
        props.put(StreamsConfig.TOPOLOGY_DESCRIPTION_PUSH_ENABLED_CONFIG, push);
        KafkaStreams app = new KafkaStreams(Shapes.filter().topology(), props);
        app.start();
        return app;
    }

    @Test
    void push_enabled_false_stores_nothing_while_an_app_beside_it_pushes() throws Exception {
        List<String> config = new ArrayList<>(Kcoord.fastStreamsGroups());
        config.add("group.streams.topology.description.class=memory");
        try (Kcoord kcoord = Kcoord.start("push-disabled", config.toArray(String[]::new))) {
            Clients.createTopics(kcoord.bootstrap(), 1, "orders", "valid-orders");
            KafkaStreams pushing = startFilterApp(kcoord, "pushing", true);
            KafkaStreams silent = startFilterApp(kcoord, "silent", false);
            try (Admin admin = Clients.admin(kcoord.bootstrap())) {
                Clients.awaitState(silent, KafkaStreams.State.RUNNING, Duration.ofSeconds(60));
                // Both were asked for their topology on their first heartbeats; once the one
                // that pushes has been stored, the other has had its chance and took none.
                Clients.await(() -> {
                    try {
                        return describe(admin, "pushing").topologyDescriptionStatus()
                                == StreamsGroupTopologyDescriptionStatus.AVAILABLE;
                    } catch (Exception e) {
                        throw new AssertionError(e);
                    }
                }, Duration.ofSeconds(60), () -> "the pushing app's description is stored");
                StreamsGroupDescription quiet = describe(admin, "silent");
                assertEquals(StreamsGroupTopologyDescriptionStatus.NOT_STORED,
                        quiet.topologyDescriptionStatus());
                assertTrue(quiet.topologyDescription().isEmpty());
            } finally {
                Clients.closeAll(List.of(pushing, silent));
            }
        }
    }

    @Test
    void without_a_plugin_the_app_runs_and_never_pushes() throws Exception {
        List<String> config = new ArrayList<>(Kcoord.fastStreamsGroups());
        config.add(REQUEST_LOG);
        try (Kcoord kcoord = Kcoord.start("no-plugin", config.toArray(String[]::new))) {
            Clients.createTopics(kcoord.bootstrap(), 2, "orders", "valid-orders");
            List<Map.Entry<String, String>> input = new ArrayList<>();
            for (int i = 0; i < 500; i++) input.add(Map.entry("order-" + i, "amount-" + i));
            Clients.produce(kcoord.bootstrap(), "orders", input);

            KafkaStreams app = startFilterApp(kcoord, "orders-app", true);
            try (Admin admin = Clients.admin(kcoord.bootstrap())) {
                Clients.awaitState(app, KafkaStreams.State.RUNNING, Duration.ofSeconds(60));
                assertEquals(500, Clients.consume(kcoord.bootstrap(), "valid-orders", 500,
                        Duration.ofSeconds(60)).size());
                assertEquals(StreamsGroupTopologyDescriptionStatus.NOT_STORED,
                        describe(admin, "orders-app").topologyDescriptionStatus());
            } finally {
                app.close(Duration.ofSeconds(30));
            }
            String log = Files.readString(kcoord.log());
            assertTrue(log.contains("api=\"StreamsGroupHeartbeat\""), "requests are logged");
            assertFalse(log.contains("StreamsGroupTopologyDescriptionUpdate"),
                    "a push reached kcoord");
        }
    }
}
