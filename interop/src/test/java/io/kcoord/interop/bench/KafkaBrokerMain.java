package io.kcoord.interop.bench;

import io.kcoord.interop.KafkaBroker;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import kafka.server.KafkaRaftServer;
import org.apache.kafka.common.utils.Utils;

/**
 * An Apache Kafka 4.4 broker in its own JVM, for benchmarks that compare kcoord with it (the
 * load bench's {@code --kafka}). Arguments: {@code key=value} broker settings. Prints
 * {@code kafka started: 127.0.0.1:<port>} once it serves, then runs until stdin closes.
 */
public final class KafkaBrokerMain {
    private KafkaBrokerMain() {}

    public static void main(String[] args) throws Exception {
        Map<String, String> settings = new LinkedHashMap<>();
        for (String arg : args) {
            int eq = arg.indexOf('=');
            if (eq < 0) throw new IllegalArgumentException("not key=value: " + arg);
            settings.put(arg.substring(0, eq), arg.substring(eq + 1));
        }
        Path dir = Files.createTempDirectory("kafka-bench");
        int port = KafkaBroker.freePort();
        KafkaRaftServer server = KafkaBroker.start(settings, port, KafkaBroker.freePort(), dir,
                "YmVuY2gta2Fma2EtY2x1cw");
        System.out.println("kafka started: 127.0.0.1:" + port);
        System.out.flush();
        try {
            while (System.in.read() >= 0) { /* until stdin closes */ }
        } catch (IOException ignored) {
            // the parent is gone
        }
        server.shutdown();
        server.awaitShutdown();
        Utils.delete(dir.toFile());
        System.exit(0);
    }
}
