package io.kcoord.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListStreamsGroupOffsetsSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.KafkaStreams;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Apache Kafka 4.4's own {@code kafka-streams-groups} ({@code StreamsGroupCommand}, from
 * kafka-tools, in a child JVM) against kcoord: every action a user runs on a streams group.
 */
class KafkaStreamsGroupsToolTest {
    private static final String GROUP = "tool-app";
    private static final int RECORDS = 200;
    private static Kcoord kcoord;

    @BeforeAll
    static void start() throws Exception {
        List<String> config = new ArrayList<>(Kcoord.fastStreamsGroups());
        config.add("group.streams.topology.description.class=memory");
        kcoord = Kcoord.start("kafka-tool", config.toArray(String[]::new));
    }

    @AfterAll
    static void stop() throws Exception {
        kcoord.close();
    }

    private static Tools.Run tool(String... args) throws Exception {
        List<String> all = new ArrayList<>(List.of("--bootstrap-server", kcoord.bootstrap()));
        all.addAll(List.of(args));
        Tools.Run run = Tools.kafkaStreamsGroups(all.toArray(String[]::new));
        assertEquals(0, run.exitCode(), run.toString());
        return run;
    }

    /** A row of the tool's table: the cells, separated by one or more spaces. */
    private static boolean hasRow(String stdout, String... cells) {
        String row = "(?m)^" + String.join("\\s+", cells.length == 0 ? new String[0]
                : java.util.Arrays.stream(cells).map(Pattern::quote).toArray(String[]::new)) + "\\s*$";
        return Pattern.compile(row).matcher(stdout).find();
    }

    private static Map<TopicPartition, OffsetAndMetadata> offsets() throws Exception {
        try (Admin admin = Clients.admin(kcoord.bootstrap())) {
            return admin.listStreamsGroupOffsets(Map.of(GROUP, new ListStreamsGroupOffsetsSpec()))
                    .partitionsToOffsetAndMetadata(GROUP).get(30, TimeUnit.SECONDS);
        }
    }

    @Test
    void list_describe_reset_delete_offsets_and_delete() throws Exception {
        Clients.createTopics(kcoord.bootstrap(), 2, "orders", "valid-orders");
        List<Map.Entry<String, String>> input = new ArrayList<>();
        for (int i = 0; i < RECORDS; i++) input.add(Map.entry("order-" + i, "amount-" + i));
        Clients.produce(kcoord.bootstrap(), "orders", input);
        KafkaStreams app = Clients.startRunning(Shapes.filter().topology(),
                Clients.streamsProps(kcoord.bootstrap(), GROUP, Clients.tempDir(GROUP)),
                Duration.ofSeconds(60));
        try {
            Clients.await(() -> {
                try {
                    return offsets().values().stream().mapToLong(OffsetAndMetadata::offset).sum() == RECORDS;
                } catch (Exception e) {
                    throw new AssertionError(e);
                }
            }, Duration.ofSeconds(60), () -> "the app committed every record");

            assertTrue(tool("--list").stdout().lines().anyMatch(GROUP::equals));
            String state = tool("--describe", "--state", "--group", GROUP).stdout();
            assertTrue(hasRow(state, GROUP, "localhost:" + port() + " (1)", "sticky", "Stable", "1")
                    || hasRow(state, GROUP, "127.0.0.1:" + port() + " (1)", "sticky", "Stable", "1"),
                    state);
            String verboseState = tool("--describe", "--state", "--verbose", "--group", GROUP).stdout();
            assertTrue(verboseState.contains("GROUP-EPOCH") && verboseState.contains("Stable"), verboseState);

            String members = tool("--describe", "--members", "--group", GROUP).stdout();
            assertTrue(members.contains("ACTIVE: 0:[0,1];"), members);
            String verboseMembers = tool("--describe", "--members", "--verbose", "--group", GROUP).stdout();
            assertTrue(verboseMembers.contains("MEMBER-EPOCH") && verboseMembers.contains("streams"),
                    verboseMembers);

            String lags = tool("--describe", "--offsets", "--group", GROUP).stdout();
            assertTrue(hasRow(lags, GROUP, "orders", "0", "0") && hasRow(lags, GROUP, "orders", "1", "0"), lags);
            String described = tool("--describe", "--offsets", "--verbose", "--group", GROUP).stdout();
            long lag0 = RECORDS; // per partition: CURRENT-OFFSET = LOG-END-OFFSET, lag 0
            for (var e : offsets().entrySet()) {
                assertTrue(hasRow(described, GROUP, "orders", Integer.toString(e.getKey().partition()),
                        Long.toString(e.getValue().offset()), "0", Long.toString(e.getValue().offset()), "0"),
                        described);
                lag0 -= e.getValue().offset();
            }
            assertEquals(0, lag0);

            String topology = tool("--describe", "--topology", "--group", GROUP).stdout();
            assertTrue(topology.contains("Source: KSTREAM-SOURCE-0000000000 (topics: [orders])"), topology);
        } finally {
            app.close(Duration.ofSeconds(30));
        }

        // Offsets of the now empty group: reset to the earliest, then those of orders deleted.
        String reset = tool("--reset-offsets", "--group", GROUP, "--input-topic", "orders", "--to-earliest",
                "--execute").stdout();
        assertTrue(hasRow(reset, GROUP, "orders", "0", "0") && hasRow(reset, GROUP, "orders", "1", "0"), reset);
        assertTrue(offsets().values().stream().allMatch(o -> o.offset() == 0), offsets().toString());

        String deleted = tool("--delete-offsets", "--group", GROUP, "--input-topic", "orders").stdout();
        assertTrue(deleted.contains("Request succeeded for deleting offsets from group " + GROUP + "."), deleted);
        assertTrue(offsets().values().stream().allMatch(o -> o == null), offsets().toString());

        String gone = tool("--delete", "--group", GROUP).stdout();
        assertTrue(gone.contains("Deletion of requested streams groups ('" + GROUP + "') was successful."), gone);
        assertTrue(tool("--list").stdout().lines().noneMatch(GROUP::equals));
    }

    private static String port() {
        return kcoord.bootstrap().substring(kcoord.bootstrap().lastIndexOf(':') + 1);
    }
}
