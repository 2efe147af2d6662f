package io.kcoord.interop;

import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * Kafka 4.4's {@code KafkaConsumer} with the classic group protocol on a thread of its own:
 * subscribes, polls, hands each record to {@code seen} and commits after each poll, until
 * closed (which leaves the group, as {@code KafkaConsumer.close} does).
 */
final class ClassicConsumer implements AutoCloseable {
    private final AtomicBoolean stop = new AtomicBoolean();
    private final AtomicReference<Set<TopicPartition>> assignment = new AtomicReference<>(Set.of());
    private final AtomicReference<Throwable> failure = new AtomicReference<>();
    private final Thread thread;

    /** The settings of a member of {@code group} with client id {@code clientId}. */
    static Properties props(String bootstrap, String group, String clientId) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
        props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
        props.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG,
                org.apache.kafka.clients.consumer.RangeAssignor.class.getName());
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        props.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 10_000);
        props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 500);
        props.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, 30_000);
        return props;
    }

    ClassicConsumer(Properties props, List<String> topics, Consumer<ConsumerRecord<String, String>> seen) {
        thread = new Thread(() -> {
            try (KafkaConsumer<String, String> consumer =
                    new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer())) {
                consumer.subscribe(topics);
                while (!stop.get()) {
                    consumer.poll(Duration.ofMillis(100)).forEach(seen);
                    try {
                        consumer.commitSync();
                    } catch (RebalanceInProgressException | CommitFailedException e) {
                        // A commit during a rebalance: the next poll completes the rebalance
                        // and the records are committed (or consumed again) after it.
                    }
                    assignment.set(Set.copyOf(consumer.assignment()));
                }
            } catch (Throwable t) {
                failure.set(t);
            }
        }, "classic-consumer-" + props.get(ConsumerConfig.CLIENT_ID_CONFIG));
        thread.start();
    }

    /** The partitions assigned after the last poll. */
    Set<TopicPartition> assignment() {
        return assignment.get();
    }

    /** What ended the consumer's thread with an exception, or null. */
    Throwable failure() {
        return failure.get();
    }

    @Override
    public void close() throws InterruptedException {
        stop.set(true);
        thread.join(30_000);
        if (thread.isAlive()) throw new AssertionError(thread.getName() + " did not stop");
    }
}
