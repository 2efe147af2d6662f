package io.kcoord.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DescribeConfigsOptions;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Issue 24's topic tools against kcoord: Kafka 4.4's {@code kafka-topics --alter --partitions},
 * {@code kafka-configs} on topics and brokers, {@code kafka-log-dirs}, and dynamic topic configs
 * taking effect on a live partition.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TopicToolsTest {
    private Kcoord kcoord;
    private Path logDir;

    @BeforeAll
    void start() throws Exception {
        logDir = Clients.tempDir("kcoord-topic-tools");
        kcoord = Kcoord.start("topic-tools", "log.dirs=" + logDir, "log.retention.check.interval.ms=200");
    }

    @AfterAll
    void stop() throws Exception {
        kcoord.close();
    }

    private ConfigEntry entry(Admin admin, ConfigResource resource, String key) throws Exception {
        Config config = admin.describeConfigs(List.of(resource),
                new DescribeConfigsOptions().includeSynonyms(true)).all().get().get(resource);
        return config.get(key);
    }

    private static long earliest(Admin admin, TopicPartition tp) {
        try {
            return admin.listOffsets(Map.of(tp, OffsetSpec.earliest())).all().get().get(tp).offset();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void kafkaTopicsAltersThePartitionCount() throws Exception {
        Clients.createTopics(kcoord.bootstrap(), 1, "grow");
        Tools.Run run = Tools.kafkaTopics("--bootstrap-server", kcoord.bootstrap(), "--alter", "--topic", "grow",
                "--partitions", "3");
        assertEquals(0, run.exitCode(), run.toString());
        Tools.Run described = Tools.kafkaTopics("--bootstrap-server", kcoord.bootstrap(), "--describe", "--topic", "grow");
        assertTrue(described.stdout().contains("PartitionCount: 3"), described.toString());
        Tools.Run shrink = Tools.kafkaTopics("--bootstrap-server", kcoord.bootstrap(), "--alter", "--topic", "grow",
                "--partitions", "2");
        assertTrue(shrink.exitCode() != 0 || shrink.stderr().contains("would not be an increase")
                || shrink.stdout().contains("would not be an increase"), shrink.toString());
        // The new partition takes records.
        Clients.produce(kcoord.bootstrap(), "grow", List.of(Map.entry("k", "v")));
        try (KafkaProducer<String, String> producer = Clients.producer(kcoord.bootstrap())) {
            assertEquals(2, producer.send(new ProducerRecord<>("grow", 2, "k", "v")).get().partition());
        }
    }

    @Test
    void kafkaConfigsAltersAndDescribesTopicAndBrokerConfigs() throws Exception {
        Clients.createTopics(kcoord.bootstrap(), 1, "configured");
        Tools.Run alter = Tools.kafkaConfigs("--bootstrap-server", kcoord.bootstrap(), "--alter", "--entity-type", "topics",
                "--entity-name", "configured", "--add-config", "retention.ms=123456,max.message.bytes=2000");
        assertEquals(0, alter.exitCode(), alter.toString());
        Tools.Run describe = Tools.kafkaConfigs("--bootstrap-server", kcoord.bootstrap(), "--describe", "--entity-type",
                "topics", "--entity-name", "configured");
        assertTrue(describe.stdout().contains("retention.ms=123456"), describe.toString());
        assertTrue(describe.stdout().contains("max.message.bytes=2000"), describe.toString());
        Tools.Run unknown = Tools.kafkaConfigs("--bootstrap-server", kcoord.bootstrap(), "--alter", "--entity-type", "topics",
                "--entity-name", "configured", "--add-config", "retention.mss=1");
        assertTrue(unknown.exitCode() != 0, unknown.toString());

        Tools.Run brokerDefault = Tools.kafkaConfigs("--bootstrap-server", kcoord.bootstrap(), "--alter", "--entity-type",
                "brokers", "--entity-default", "--add-config", "log.retention.bytes=1000000");
        assertEquals(0, brokerDefault.exitCode(), brokerDefault.toString());
        Tools.Run brokerOwn = Tools.kafkaConfigs("--bootstrap-server", kcoord.bootstrap(), "--alter", "--entity-type",
                "brokers", "--entity-name", "1", "--add-config", "log.retention.bytes=2000000");
        assertEquals(0, brokerOwn.exitCode(), brokerOwn.toString());
        Tools.Run brokerDescribe = Tools.kafkaConfigs("--bootstrap-server", kcoord.bootstrap(), "--describe",
                "--entity-type", "brokers", "--entity-name", "1");
        assertTrue(brokerDescribe.stdout().contains("log.retention.bytes=2000000"), brokerDescribe.toString());
        Tools.Run readOnly = Tools.kafkaConfigs("--bootstrap-server", kcoord.bootstrap(), "--alter", "--entity-type",
                "brokers", "--entity-default", "--add-config", "log.dirs=/tmp/x");
        assertTrue(readOnly.exitCode() != 0, readOnly.toString());
        try (Admin admin = Clients.admin(kcoord.bootstrap())) {
            ConfigEntry retention = entry(admin, new ConfigResource(ConfigResource.Type.TOPIC, "configured"),
                    "retention.bytes");
            assertEquals("2000000", retention.value());
            assertEquals(ConfigEntry.ConfigSource.DYNAMIC_BROKER_CONFIG, retention.source());
            assertEquals(List.of(ConfigEntry.ConfigSource.DYNAMIC_BROKER_CONFIG,
                    ConfigEntry.ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, ConfigEntry.ConfigSource.DEFAULT_CONFIG),
                    retention.synonyms().stream().map(ConfigEntry.ConfigSynonym::source).toList());
        }
        Tools.Run cleanUp = Tools.kafkaConfigs("--bootstrap-server", kcoord.bootstrap(), "--alter", "--entity-type",
                "brokers", "--entity-name", "1", "--delete-config", "log.retention.bytes");
        assertEquals(0, cleanUp.exitCode(), cleanUp.toString());
        Tools.Run cleanUpDefault = Tools.kafkaConfigs("--bootstrap-server", kcoord.bootstrap(), "--alter", "--entity-type",
                "brokers", "--entity-default", "--delete-config", "log.retention.bytes");
        assertEquals(0, cleanUpDefault.exitCode(), cleanUpDefault.toString());
    }

    @Test
    void kafkaLogDirsDescribesTheDirectoryAndItsPartitions() throws Exception {
        Clients.createTopics(kcoord.bootstrap(), 2, "sized");
        Clients.produce(kcoord.bootstrap(), "sized", List.of(Map.entry("k", "v")));
        Tools.Run run = Tools.kafkaLogDirs("--bootstrap-server", kcoord.bootstrap(), "--describe", "--topic-list", "sized");
        assertEquals(0, run.exitCode(), run.toString());
        assertTrue(run.stdout().contains("\"logDir\":\"" + logDir.toAbsolutePath() + "\""), run.toString());
        assertTrue(run.stdout().contains("\"partition\":\"sized-0\""), run.toString());
        assertTrue(run.stdout().contains("\"partition\":\"sized-1\""), run.toString());
        assertTrue(run.stdout().contains("\"offsetLag\":0"), run.toString());
    }

    @Test
    void aDynamicRetentionAndCleanupPolicyChangeTakesEffectOnALivePartition() throws Exception {
        Clients.createTopics(kcoord.bootstrap(), 1, "aging");
        TopicPartition tp = new TopicPartition("aging", 0);
        long old = System.currentTimeMillis() - 3_600_000L;
        try (KafkaProducer<String, String> producer = Clients.producer(kcoord.bootstrap())) {
            for (int i = 0; i < 3; i++) {
                producer.send(new ProducerRecord<>("aging", 0, old, "k" + i, "v")).get();
            }
        }
        try (Admin admin = Clients.admin(kcoord.bootstrap())) {
            assertEquals(0L, admin.listOffsets(Map.of(tp, OffsetSpec.earliest())).all().get().get(tp).offset());
            Tools.Run alter = Tools.kafkaConfigs("--bootstrap-server", kcoord.bootstrap(), "--alter", "--entity-type",
                    "topics", "--entity-name", "aging", "--add-config", "retention.ms=60000");
            assertEquals(0, alter.exitCode(), alter.toString());
            Clients.await(() -> earliest(admin, tp) == 3L, java.time.Duration.ofSeconds(30),
                    () -> "retention.ms deleted the old records");
        }
        Tools.Run compact = Tools.kafkaConfigs("--bootstrap-server", kcoord.bootstrap(), "--alter", "--entity-type",
                "topics", "--entity-name", "aging", "--add-config", "cleanup.policy=compact");
        assertEquals(0, compact.exitCode(), compact.toString());
        Properties noRetries = new Properties();
        try (KafkaProducer<String, String> producer = Clients.producer(kcoord.bootstrap(), noRetries)) {
            ExecutionException e = assertThrows(ExecutionException.class,
                    () -> producer.send(new ProducerRecord<>("aging", 0, null, "no key")).get());
            assertInstanceOf(InvalidRecordException.class, e.getCause(), e.toString());
        }
    }
}
