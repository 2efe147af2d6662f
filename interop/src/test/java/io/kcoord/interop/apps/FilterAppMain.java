package io.kcoord.interop.apps;

import io.kcoord.interop.Clients;
import io.kcoord.interop.Shapes;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.Properties;
import org.apache.kafka.streams.KafkaStreams;

/**
 * One instance of the appendix app in its own JVM, so a test can kill it without a goodbye.
 * Arguments: bootstrap, application id, state directory. Prints {@code STATE <state>} on each
 * change; closes (leaving the group) and exits when stdin says {@code close} or ends.
 */
public final class FilterAppMain {
    private FilterAppMain() {}

    public static void main(String[] args) throws Exception {
        Properties props = Clients.streamsProps(args[0], args[1], Paths.get(args[2]));
        KafkaStreams app = new KafkaStreams(Shapes.filter().topology(), props);
        app.setStateListener((now, before) -> {
            System.out.println("STATE " + now);
            System.out.flush();
        });
        app.start();
        BufferedReader stdin =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = stdin.readLine()) != null && !line.equals("close")) {
            // wait
        }
        app.close(Duration.ofSeconds(30));
        System.exit(0);
    }
}
