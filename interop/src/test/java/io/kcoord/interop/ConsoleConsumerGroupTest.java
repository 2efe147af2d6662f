package io.kcoord.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/**
 * Kafka 4.4's {@code kafka-console-consumer --group}
 * ({@code org.apache.kafka.tools.consumer.ConsoleConsumer}, in a child JVM as the script runs
 * it) against the server (kcoord; Kafka 4.4 with {@code -Dinterop.target=kafka}): it joins a
 * classic group, reads the topic and commits as it closes, so the next run with the same group
 * reads only what was produced since, and a run after that reads nothing.
 */
class ConsoleConsumerGroupTest {
    private static final String TOPIC = "console-in";
    private static final String GROUP = "console-group";

    private static List<Map.Entry<String, String>> records(int from, int to) {
        List<Map.Entry<String, String>> records = new ArrayList<>();
        for (int i = from; i < to; i++) records.add(Map.entry("k" + i, "v" + i));
        return records;
    }

    private static List<String> values(int from, int to) {
        return records(from, to).stream().map(Map.Entry::getValue).sorted().toList();
    }

    private static Tools.Run consume(String bootstrap, String... extra) throws Exception {
        List<String> args = new ArrayList<>(List.of("--bootstrap-server", bootstrap, "--topic", TOPIC,
                "--group", GROUP, "--from-beginning"));
        args.addAll(List.of(extra));
        Tools.Run run = Tools.java("org.apache.kafka.tools.consumer.ConsoleConsumer", args.toArray(String[]::new));
        System.out.println("kafka-console-consumer " + String.join(" ", args) + "\n" + run);
        assertEquals(0, run.exitCode(), run.toString());
        return run;
    }

    private static List<String> printed(Tools.Run run) {
        return run.stdout().lines().filter(l -> !l.isBlank()).sorted().toList();
    }

    /** The last line of {@code text} that is not blank (the tool's count follows its log lines). */
    private static String lastLine(String text) {
        List<String> lines = text.lines().filter(l -> !l.isBlank()).toList();
        return lines.isEmpty() ? "" : lines.get(lines.size() - 1).trim();
    }

    private static long committedTotal(Admin admin) throws Exception {
        Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(GROUP)
                .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
        return offsets.values().stream().collect(Collectors.summingLong(OffsetAndMetadata::offset));
    }

    @Test
    void a_second_run_with_the_same_group_reads_only_what_is_new() throws Exception {
        try (Target target = Target.start("console-consumer", ClassicConsumerGroupTest.SETTINGS);
                Admin admin = Clients.admin(target.bootstrap())) {
            String bootstrap = target.bootstrap();
            Clients.createTopics(bootstrap, 2, TOPIC);
            Clients.produce(bootstrap, TOPIC, records(0, 20));

            Tools.Run first = consume(bootstrap, "--max-messages", "20", "--timeout-ms", "60000");
            assertEquals(values(0, 20), printed(first));
            assertEquals("Processed a total of 20 messages", lastLine(first.stderr()));
            assertEquals(20, committedTotal(admin), "the first run committed what it read as it closed");

            // --from-beginning only applies where the group has no offset: this run starts at
            // the committed ones and sees the ten new records, not the first ten.
            Clients.produce(bootstrap, TOPIC, records(20, 30));
            Tools.Run second = consume(bootstrap, "--max-messages", "10", "--timeout-ms", "60000");
            assertEquals(values(20, 30), printed(second));
            assertEquals(30, committedTotal(admin));

            Tools.Run third = consume(bootstrap, "--timeout-ms", "5000");
            assertEquals(List.of(), printed(third));
            assertEquals("Processed a total of 0 messages", lastLine(third.stderr()));
            assertEquals(30, committedTotal(admin));
        }
    }
}
