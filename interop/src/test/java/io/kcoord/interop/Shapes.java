package io.kcoord.interop;

import java.time.Duration;
import java.util.List;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;

/** Kafka Streams topologies of different shapes, each with the topics it reads. */
public final class Shapes {
    private Shapes() {}

    /** A topology, the application id to run it under and the topics to create first. */
    public record Shape(String name, Topology topology, List<String> inputTopics) {}

    public static List<Shape> all() {
        return List.of(filter(), stateful(), join(), globalStore(), manySubtopologies());
    }

    /** The specification's appendix: orders -> filter -> valid-orders. */
    public static Shape filter() {
        StreamsBuilder builder = new StreamsBuilder();
        builder.<String, String>stream("orders")
                .filter((key, value) -> value != null)
                .to("valid-orders");
        return new Shape("filter", builder.build(), List.of("orders"));
    }

    /** groupBy + count (a repartition and a changelog topic) beside a global table. */
    public static Shape stateful() {
        StreamsBuilder builder = new StreamsBuilder();
        builder.<String, String>stream("words")
                .groupBy((key, word) -> word)
                .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts"))
                .toStream()
                .to("word-counts", Produced.with(Serdes.String(), Serdes.Long()));
        builder.globalTable("prices", Materialized.as("prices-store"));
        return new Shape("stateful", builder.build(), List.of("words", "prices"));
    }

    /** A windowed stream-stream join (two window stores and their changelogs). */
    public static Shape join() {
        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> left = builder.stream("clicks");
        KStream<String, String> right = builder.stream("views");
        left.join(right, (click, view) -> click + "/" + view,
                        JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofMinutes(5)))
                .to("clicks-with-views");
        return new Shape("join", builder.build(), List.of("clicks", "views"));
    }

    /** A global store fed by its own processor, read by a stream's processor. */
    public static Shape globalStore() {
        StreamsBuilder builder = new StreamsBuilder();
        builder.addGlobalStore(
                Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("rates"),
                        Serdes.String(), Serdes.String()).withLoggingDisabled(),
                "rates-topic",
                Consumed.with(Serdes.String(), Serdes.String()),
                () -> new StoreUpdater("rates"));
        builder.<String, String>stream("payments")
                .mapValues(value -> value.toUpperCase())
                .to("payments-out");
        return new Shape("global-store", builder.build(), List.of("rates-topic", "payments"));
    }

    /** A source with two branches, a repartition, a merge and a table: several sub-topologies. */
    public static Shape manySubtopologies() {
        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> events = builder.stream("events");
        events.filter((k, v) -> v.startsWith("a")).to("a-events");
        KStream<String, String> rekeyed = events.selectKey((k, v) -> v).repartition();
        KStream<String, String> audit = builder.stream("audit");
        rekeyed.merge(audit)
                .groupByKey()
                .reduce((a, b) -> b, Materialized.as("latest"))
                .toStream()
                .to("latest-events");
        return new Shape("many-subtopologies", builder.build(), List.of("events", "audit"));
    }

    /** Puts every record into a key-value store (a global store's processor). */
    static final class StoreUpdater implements Processor<String, String, Void, Void> {
        private final String storeName;
        private KeyValueStore<String, String> store;

        StoreUpdater(String storeName) {
            this.storeName = storeName;
        }

        @Override
        public void init(ProcessorContext<Void, Void> context) {
            store = context.getStateStore(storeName);
        }

        @Override
        public void process(Record<String, String> record) {
            store.put(record.key(), record.value());
        }
    }
}
