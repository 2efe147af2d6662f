package io.kcoord.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kcoord.interop.apps.FilterAppMain;
import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeStreamsGroupsOptions;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.admin.StreamsGroupTopologyDescriptionStatus;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.streams.KafkaStreams;
import org.junit.jupiter.api.Test;

/**
 * The specification's rolling-upgrade system test with real clients: a Kafka Streams 4.2 app
 * (StreamsGroupHeartbeat v0, which cannot push) runs against kcoord with a plugin and is never
 * asked to push, beside a Kafka Streams 4.4 app in another group whose description is stored.
 */
class RollingUpgradeTest {
    private static final String REQUEST_LOG = "log.level=info,kcoord_server::dispatch=debug";

    /** The test classpath with Kafka Streams and clients 4.2 in place of 4.4. */
    private static String classpathWithKafka42() throws IOException {
        Path jars = Paths.get(System.getProperty("kafka.old.jars", "target/kafka-4.2"));
        List<String> entries = new ArrayList<>();
        try (var files = Files.list(jars)) {
            files.map(Path::toString).sorted().forEach(entries::add);
        }
        assertEquals(2, entries.size(), "kafka-streams and kafka-clients 4.2 in " + jars);
        Arrays.stream(System.getProperty("java.class.path").split(File.pathSeparator))
                .filter(e -> !e.matches(".*/kafka-(streams|clients)-4\\.4\\.0\\.jar"))
                .forEach(entries::add);
        return String.join(File.pathSeparator, entries);
    }

    private static Process startKafka42App(Kcoord kcoord, String group) throws IOException {
        Path log = Paths.get(System.getProperty("kcoord.logs", "target/kcoord-logs"), group + ".log");
        return Tools.spawnJavaOn(classpathWithKafka42(), log, FilterAppMain.class.getName(),
                kcoord.bootstrap(), group, Clients.tempDir(group).toString());
    }

    private static StreamsGroupDescription describe(Admin admin, String group) throws Exception {
        return admin.describeStreamsGroups(List.of(group),
                        new DescribeStreamsGroupsOptions().includeTopologyDescription(true))
                .describedGroups().get(group).get(30, TimeUnit.SECONDS);
    }

    @Test
    void a_kafka_streams_4_2_app_is_never_asked_to_push_beside_a_4_4_app_that_is() throws Exception {
        List<String> config = new ArrayList<>(Kcoord.fastStreamsGroups());
        config.add("group.streams.topology.description.class=memory");
        config.add(REQUEST_LOG);
        try (Kcoord kcoord = Kcoord.start("rolling-upgrade", config.toArray(String[]::new))) {
            Clients.createTopics(kcoord.bootstrap(), 2, "orders", "valid-orders");
            List<Map.Entry<String, String>> input = new ArrayList<>();
            for (int i = 0; i < 1000; i++) input.add(Map.entry("order-" + i, "amount-" + i));
            Clients.produce(kcoord.bootstrap(), "orders", input);

            Process old = startKafka42App(kcoord, "app-4-2");
            KafkaStreams current = new KafkaStreams(Shapes.filter().topology(), Clients.streamsProps(
                    kcoord.bootstrap(), "app-4-4", Clients.tempDir("app-4-4")));
            current.start();
            try (Admin admin = Clients.admin(kcoord.bootstrap())) {
                Clients.await(() -> {
                    try {
                        return describe(admin, "app-4-4").topologyDescriptionStatus()
                                == StreamsGroupTopologyDescriptionStatus.AVAILABLE
                                && describe(admin, "app-4-2").groupState() == GroupState.STABLE;
                    } catch (Exception e) {
                        return false;
                    }
                }, Duration.ofSeconds(90), () -> "the 4.4 app's description stored, the 4.2 app stable");
                // Both process: each app writes every order once to valid-orders.
                assertEquals(2000, Clients.consume(kcoord.bootstrap(), "valid-orders", 2000,
                        Duration.ofSeconds(60)).size());
                assertEquals(StreamsGroupTopologyDescriptionStatus.NOT_STORED,
                        describe(admin, "app-4-2").topologyDescriptionStatus());
            } finally {
                current.close(Duration.ofSeconds(30));
                try (OutputStream stdin = old.getOutputStream()) {
                    stdin.write("close\n".getBytes(StandardCharsets.UTF_8));
                }
                if (!old.waitFor(60, TimeUnit.SECONDS)) old.destroyForcibly();
            }

            // The 4.2 app spoke heartbeat v0 only, and no push reached kcoord but the 4.4 app's.
            List<String> requests = Files.readAllLines(kcoord.log()).stream()
                    .filter(l -> l.contains("kcoord_server::dispatch: request")).collect(Collectors.toList());
            List<String> oldHeartbeats = requests.stream()
                    .filter(l -> l.contains("api=\"StreamsGroupHeartbeat\"") && l.contains("client_id=\"app-4-2-"))
                    .collect(Collectors.toList());
            assertTrue(!oldHeartbeats.isEmpty() && oldHeartbeats.stream().allMatch(l -> l.contains(" version=0 ")),
                    "the 4.2 app's heartbeats: " + oldHeartbeats.subList(0, Math.min(3, oldHeartbeats.size())));
            List<String> pushes = requests.stream()
                    .filter(l -> l.contains("api=\"StreamsGroupTopologyDescriptionUpdate\""))
                    .collect(Collectors.toList());
            assertTrue(!pushes.isEmpty() && pushes.stream().allMatch(l -> l.contains("client_id=\"app-4-4-")),
                    "pushes: " + pushes);
        }
    }
}
