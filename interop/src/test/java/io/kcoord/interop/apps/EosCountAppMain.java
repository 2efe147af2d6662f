package io.kcoord.interop.apps;

import io.kcoord.interop.Clients;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.Properties;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * One instance of an exactly-once (exactly_once_v2) counting app in its own JVM, so a test can
 * kill it with SIGKILL: eos-in (key: record id, value: a group name) -> groupBy(value) (a
 * repartition topic) -> count (a store and its changelog) -> eos-out (group -> count), the
 * record cache off so every increment is written. Arguments: bootstrap, application id, state
 * directory. Prints {@code STATE <state>} on each change; closes and exits when stdin says
 * {@code close} or ends.
 */
public final class EosCountAppMain {
    private EosCountAppMain() {}

    public static Topology topology() {
        StreamsBuilder builder = new StreamsBuilder();
        builder.<String, String>stream("eos-in")
                .groupBy((id, group) -> group, Grouped.as("by-group"))
                .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("eos-counts"))
                .toStream()
                .to("eos-out", Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }

    public static Properties props(String bootstrap, String applicationId, String stateDir) {
        Properties props = Clients.streamsProps(bootstrap, applicationId, Paths.get(stateDir));
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        return props;
    }

    public static void main(String[] args) throws Exception {
        KafkaStreams app = new KafkaStreams(topology(), props(args[0], args[1], args[2]));
        app.setStateListener((now, before) -> {
            System.out.println("STATE " + now);
            System.out.flush();
        });
        app.start();
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = stdin.readLine()) != null && !line.equals("close")) {
            // wait
        }
        app.close(Duration.ofSeconds(30));
        System.exit(0);
    }
}
