package io.kcoord.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Kafka 4.4's {@code kafka-consumer-groups} tool
 * ({@code org.apache.kafka.tools.consumer.group.ConsumerGroupCommand}) against the server
 * (kcoord; Kafka 4.4 with {@code -Dinterop.target=kafka}) and a group of real classic
 * {@code KafkaConsumer}s: {@code --list}, every {@code --describe} view, {@code --reset-offsets},
 * {@code --delete-offsets} and {@code --delete}, while the members run and after they stopped.
 * The output is parsed and compared with what Kafka 4.4 prints.
 */
class ConsumerGroupsToolTest {
    static final List<String> SETTINGS = List.of(
            "node.id=0", "group.initial.rebalance.delay.ms=0", "offsets.topic.num.partitions=5");
    private static final String GROUP = "cg-tool";
    private static final String TOPIC = "cg-t";
    private static final int PARTITIONS = 3;
    private static final int PER_PARTITION = 10;
    private static final Map<TopicPartition, Long> ALL_COMMITTED = Map.of(tp(0), 10L, tp(1), 10L, tp(2), 10L);

    private Target target;
    private Admin admin;
    private final List<ClassicConsumer> members = new ArrayList<>();

    @BeforeEach
    void start() throws Exception {
        target = Target.start("consumer-groups-tool", SETTINGS);
        admin = Clients.admin(target.bootstrap());
        Clients.createTopics(target.bootstrap(), PARTITIONS, TOPIC);
        try (KafkaProducer<String, String> producer = Clients.producer(target.bootstrap())) {
            for (int p = 0; p < PARTITIONS; p++) {
                for (int i = 0; i < PER_PARTITION; i++) {
                    producer.send(new ProducerRecord<>(TOPIC, p, "k" + i, "p" + p + "-" + i));
                }
            }
            producer.flush();
        }
    }

    @AfterEach
    void stop() throws Exception {
        for (ClassicConsumer m : members) m.close();
        admin.close();
        target.close();
    }

    private Tools.Run tool(String... args) {
        List<String> all = new ArrayList<>(List.of("--bootstrap-server", target.bootstrap()));
        all.addAll(List.of(args));
        Tools.Run run = Tools.inProcess(org.apache.kafka.tools.consumer.group.ConsumerGroupCommand::main,
                all.toArray(String[]::new));
        System.out.println("kafka-consumer-groups " + String.join(" ", args) + "\n" + run);
        return run;
    }

    /** The lines of {@code text} that are not blank, each split on runs of spaces. */
    static List<List<String>> table(String text) {
        List<List<String>> rows = new ArrayList<>();
        for (String line : text.split("\n")) {
            if (!line.isBlank()) rows.add(Arrays.asList(line.trim().split("\\s+")));
        }
        return rows;
    }

    private ConsumerGroupDescription describe() throws Exception {
        return admin.describeConsumerGroups(List.of(GROUP)).all().get(30, TimeUnit.SECONDS).get(GROUP);
    }

    private Map<TopicPartition, Long> committed() throws Exception {
        Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(GROUP)
                .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
        return offsets.entrySet().stream().filter(e -> e.getValue() != null)
                .collect(Collectors.toMap(Map.Entry::getKey, e -> e.getValue().offset()));
    }

    private static TopicPartition tp(int p) {
        return new TopicPartition(TOPIC, p);
    }

    /** Two members, client ids cg-a and cg-b, that consumed and committed every record. */
    private void startTwoMembers(Set<String> seen) throws Exception {
        for (String client : List.of("cg-a", "cg-b")) {
            members.add(new ClassicConsumer(ClassicConsumer.props(target.bootstrap(), GROUP, client),
                    List.of(TOPIC), r -> seen.add(r.value())));
        }
        Clients.await(() -> {
            try {
                ConsumerGroupDescription d = describe();
                int owned = members.stream().mapToInt(m -> m.assignment().size()).sum();
                return d.groupState() == GroupState.STABLE && d.members().size() == 2 && owned == PARTITIONS
                        && committed().equals(ALL_COMMITTED);
            } catch (Exception e) {
                return false;
            }
        }, Duration.ofSeconds(60), () -> "no stable group of 2 that committed everything: " + members.stream()
                .map(m -> m.assignment() + " " + m.failure()).collect(Collectors.joining(", ")));
        assertEquals(PARTITIONS * PER_PARTITION, seen.size());
    }

    /** The rows of a run's stdout after the header that starts with {@code first}, sorted. */
    private static List<List<String>> rowsAfter(Tools.Run run, String first) {
        List<List<String>> rows = table(run.stdout());
        int header = -1;
        for (int i = 0; i < rows.size(); i++) {
            if (rows.get(i).get(0).equals(first)) header = i;
        }
        if (header < 0) throw new AssertionError("no header " + first + " in\n" + run);
        List<List<String>> after = new ArrayList<>(rows.subList(header + 1, rows.size()));
        after.sort(Comparator.comparing(r -> String.join(" ", r)));
        return after;
    }

    private static void assertOutput(Tools.Run run, String expected) {
        assertEquals(0, run.exitCode(), run.toString());
        assertTrue(run.stdout().contains(expected), "expected \"" + expected + "\" in\n" + run);
    }

    private void awaitEmpty() throws InterruptedException {
        Clients.await(() -> {
            try {
                return describe().groupState() == GroupState.EMPTY;
            } catch (Exception e) {
                return false;
            }
        }, Duration.ofSeconds(30), () -> "the group did not become empty");
    }

    @Test
    void list_describe_reset_delete_offsets_and_delete_a_group_of_classic_consumers() throws Exception {
        Set<String> seen = ConcurrentHashMap.newKeySet();
        startTwoMembers(seen);
        describeWhileTheMembersRun();
        refusedWhileTheMembersRun();

        for (ClassicConsumer m : members) m.close();
        members.clear();
        awaitEmpty();
        describeAfterTheMembersStopped();
        resetAndDeleteOffsetsOfTheEmptyGroup();

        // A member that joins now starts where the tool left the offsets: 0, 5 and (no offset,
        // auto.offset.reset=earliest) 0.
        Queue<String> again = new ConcurrentLinkedQueue<>();
        try (ClassicConsumer c = new ClassicConsumer(ClassicConsumer.props(target.bootstrap(), GROUP, "cg-c"),
                List.of(TOPIC), r -> again.add(r.value()))) {
            Clients.await(() -> {
                try {
                    return committed().equals(ALL_COMMITTED);
                } catch (Exception e) {
                    return false;
                }
            }, Duration.ofSeconds(60), () -> "cg-c did not commit to the end: " + again.size() + " " + c.failure());
        }
        List<String> expected = new ArrayList<>();
        for (int i = 0; i < PER_PARTITION; i++) expected.addAll(List.of("p0-" + i, "p2-" + i));
        for (int i = 5; i < PER_PARTITION; i++) expected.add("p1-" + i);
        assertEquals(expected.stream().sorted().toList(), again.stream().sorted().toList());
        awaitEmpty();

        assertOutput(tool("--delete", "--group", GROUP),
                "Deletion of requested consumer groups ('" + GROUP + "') was successful.");
        assertEquals("", tool("--list").stdout().trim());
        assertOutput(tool("--describe", "--group", GROUP), "Error: Executing consumer group command failed due to "
                + "org.apache.kafka.common.errors.GroupIdNotFoundException: Group " + GROUP + " not found.");
    }

    private void describeWhileTheMembersRun() throws Exception {
        Map<Integer, MemberDescription> owners = new TreeMap<>();
        List<MemberDescription> described = new ArrayList<>(describe().members());
        described.sort(Comparator.comparing(MemberDescription::clientId));
        for (MemberDescription m : described) {
            m.assignment().topicPartitions().forEach(tp -> owners.put(tp.partition(), m));
        }
        assertEquals(Set.of(0, 1, 2), owners.keySet());

        assertEquals(GROUP, tool("--list").stdout().trim());
        assertEquals(List.of(List.of("GROUP", "STATE"), List.of(GROUP, "Stable")),
                table(tool("--list", "--state").stdout()));

        List<List<String>> offsets = new ArrayList<>();
        owners.forEach((p, m) -> offsets.add(List.of(GROUP, TOPIC, String.valueOf(p), "10", "10", "0",
                m.consumerId(), "/127.0.0.1", m.clientId())));
        for (String[] view : List.of(new String[] {}, new String[] {"--offsets"})) {
            List<String> args = new ArrayList<>(List.of("--describe", "--group", GROUP));
            args.addAll(List.of(view));
            Tools.Run run = tool(args.toArray(String[]::new));
            assertEquals(List.of("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                    "CONSUMER-ID", "HOST", "CLIENT-ID"), table(run.stdout()).get(0));
            assertEquals(offsets, rowsAfter(run, "GROUP"));
        }

        List<List<String>> memberRows = new ArrayList<>();
        List<List<String>> verboseRows = new ArrayList<>();
        for (MemberDescription m : described) {
            List<String> row = List.of(GROUP, m.consumerId(), "/127.0.0.1", m.clientId(),
                    String.valueOf(m.assignment().topicPartitions().size()));
            memberRows.add(row);
            String parts = m.assignment().topicPartitions().stream().map(TopicPartition::partition).sorted()
                    .map(String::valueOf).collect(Collectors.joining(","));
            List<String> verbose = new ArrayList<>(row);
            verbose.addAll(List.of("-", TOPIC + ":" + parts, "-", "-"));
            verboseRows.add(verbose);
        }
        Tools.Run membersRun = tool("--describe", "--group", GROUP, "--members");
        assertEquals(List.of("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"), table(membersRun.stdout()).get(0));
        assertEquals(memberRows, rowsAfter(membersRun, "GROUP"));
        Tools.Run verbose = tool("--describe", "--group", GROUP, "--members", "--verbose");
        assertEquals(List.of("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "CURRENT-EPOCH",
                "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"), table(verbose.stdout()).get(0));
        assertEquals(verboseRows, rowsAfter(verbose, "GROUP"));

        Tools.Run state = tool("--describe", "--group", GROUP, "--state");
        assertEquals(List.of(List.of("GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"),
                List.of(GROUP, coordinator(), "(0)", "range", "Stable", "2")), table(state.stdout()));
    }

    /** The coordinator as {@code --describe --state} prints it: host:port of node 0. */
    private String coordinator() {
        return "127.0.0.1:" + target.bootstrap().substring(target.bootstrap().lastIndexOf(':') + 1);
    }

    /** Resetting offsets, deleting the subscribed topic's offsets and deleting the group fail. */
    private void refusedWhileTheMembersRun() throws Exception {
        Tools.Run reset = tool("--reset-offsets", "--group", GROUP, "--to-earliest", "--topic", TOPIC, "--execute");
        assertOutput(reset, "Error: Assignments can only be reset if the group '" + GROUP
                + "' is inactive, but the current state is Stable.");
        assertEquals(List.of(), rowsAfter(reset, "GROUP"));

        Tools.Run deleteOffsets = tool("--delete-offsets", "--group", GROUP, "--topic", TOPIC);
        assertOutput(deleteOffsets, "Error: Encountered some partition-level error, see the follow-up details.");
        List<List<String>> refused = new ArrayList<>();
        for (int p = 0; p < PARTITIONS; p++) {
            List<String> row = new ArrayList<>(List.of(TOPIC, String.valueOf(p)));
            row.addAll(Arrays.asList(("Error: org.apache.kafka.common.errors.GroupSubscribedToTopicException: "
                    + "Deleting offsets of a topic is forbidden while the consumer group is actively subscribed to it.")
                    .split(" ")));
            refused.add(row);
        }
        assertEquals(refused, rowsAfter(deleteOffsets, "TOPIC"));

        assertOutput(tool("--delete", "--group", GROUP), "Error: Deletion of some consumer groups failed:\n* Group '"
                + GROUP + "' could not be deleted due to: org.apache.kafka.common.errors.GroupNotEmptyException: "
                + "The group is not empty.");
        assertEquals(ALL_COMMITTED, committed());
    }

    private void describeAfterTheMembersStopped() throws Exception {
        String noMembers = "Consumer group '" + GROUP + "' has no active members.";
        assertEquals(List.of(List.of("GROUP", "STATE"), List.of(GROUP, "Empty")),
                table(tool("--list", "--state").stdout()));
        Tools.Run offsets = tool("--describe", "--group", GROUP);
        List<List<String>> rows = new ArrayList<>();
        for (int p = 0; p < PARTITIONS; p++) {
            rows.add(List.of(GROUP, TOPIC, String.valueOf(p), "10", "10", "0", "-", "-", "-"));
        }
        assertEquals(rows, rowsAfter(offsets, "GROUP"));
        assertEquals(noMembers, offsets.stderr().trim());
        Tools.Run membersRun = tool("--describe", "--group", GROUP, "--members");
        assertEquals(List.of(List.of("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS")),
                table(membersRun.stdout()));
        assertEquals(noMembers, membersRun.stderr().trim());
        Tools.Run state = tool("--describe", "--group", GROUP, "--state");
        assertEquals(List.of(GROUP, coordinator(), "(0)", "-", "Empty", "0"), table(state.stdout()).get(1));
        assertEquals(noMembers, state.stderr().trim());
    }

    private void resetAndDeleteOffsetsOfTheEmptyGroup() throws Exception {
        Tools.Run earliest = tool("--reset-offsets", "--group", GROUP, "--to-earliest", "--topic", TOPIC, "--execute");
        assertEquals(List.of("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"), table(earliest.stdout()).get(0));
        assertEquals(List.of(List.of(GROUP, TOPIC, "0", "0"), List.of(GROUP, TOPIC, "1", "0"),
                List.of(GROUP, TOPIC, "2", "0")), rowsAfter(earliest, "GROUP"));
        assertEquals(Map.of(tp(0), 0L, tp(1), 0L, tp(2), 0L), committed());

        Tools.Run toOffset = tool("--reset-offsets", "--group", GROUP, "--to-offset", "5", "--topic", TOPIC + ":1",
                "--execute");
        assertEquals(List.of(List.of(GROUP, TOPIC, "1", "5")), rowsAfter(toOffset, "GROUP"));

        Tools.Run deleted = tool("--delete-offsets", "--group", GROUP, "--topic", TOPIC + ":2");
        assertEquals(List.of("Request", "succeeded", "for", "deleting", "offsets", "from", "group", GROUP + "."),
                table(deleted.stdout()).get(0));
        assertEquals(List.of(List.of(TOPIC, "2", "Successful")), rowsAfter(deleted, "TOPIC"));
        assertEquals(Map.of(tp(0), 0L, tp(1), 5L), committed());
    }
}
