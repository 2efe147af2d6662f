package io.kcoord.interop.diff;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.function.Supplier;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.network.RequestConvertToJson;

/**
 * One server's run of one scenario: sends the scenario's requests and records the transcript
 * of (step name, masked JSON of the response).
 */
final class Side implements AutoCloseable {
    /** A recorded step. {@code ties}: the assignor may legitimately pick other members. */
    record Step(String name, JsonNode json, boolean ties) {}

    final String server; // "kafka" or "kcoord"
    final String bootstrap;
    final Servers servers;
    final List<Step> transcript = new ArrayList<>();
    private final Map<String, String> uuidSymbols = new HashMap<>();
    private final WireClient client;
    private WireClient controllerClient;

    Side(String server, String bootstrap, Servers servers) {
        this.server = server;
        this.bootstrap = bootstrap;
        this.servers = servers;
        this.client = new WireClient(bootstrap, "diff-suite");
    }

    boolean isKafka() {
        return server.equals("kafka");
    }

    /** Sends without recording (set-up, polling). A closed connection gives null. */
    AbstractResponse send(AbstractRequest.Builder<?> builder, short version, String clientId)
            throws IOException {
        try {
            return client.send(builder, version, clientId);
        } catch (IOException e) {
            return null;
        }
    }

    /** Sends and records the masked response as step {@code step}. */
    AbstractResponse call(String step, AbstractRequest.Builder<?> builder, short version) throws IOException {
        return call(step, builder, version, "diff-suite", false);
    }

    AbstractResponse call(String step, AbstractRequest.Builder<?> builder, short version,
            String clientId, boolean ties) throws IOException {
        AbstractResponse response = send(builder, version, clientId);
        record(step, response, version, ties, Function.identity());
        return response;
    }

    /** Sends and records the response as projected by {@code projection} (then masked). */
    AbstractResponse call(String step, AbstractRequest.Builder<?> builder, short version,
            Function<JsonNode, JsonNode> projection) throws IOException {
        AbstractResponse response = send(builder, version, "diff-suite");
        record(step, response, version, false, projection);
        return response;
    }

    /**
     * Like {@link #call(String, AbstractRequest.Builder, short, Function)}, to the server's
     * controller listener (a connection of its own; a closed connection is recorded as such).
     */
    AbstractResponse callController(String step, AbstractRequest.Builder<?> builder, short version,
            Function<JsonNode, JsonNode> projection) {
        AbstractResponse response = sendController(builder, version);
        record(step, response, version, false, projection);
        return response;
    }

    /** Sends to the controller listener without recording. A closed connection gives null. */
    AbstractResponse sendController(AbstractRequest.Builder<?> builder, short version) {
        if (controllerClient == null) {
            controllerClient = new WireClient(isKafka() ? servers.kafkaController() : servers.kcoordController(),
                    "diff-suite");
        }
        try {
            return controllerClient.send(builder, version);
        } catch (IOException e) {
            return null;
        }
    }

    void record(String step, AbstractResponse response, short version, boolean ties,
            Function<JsonNode, JsonNode> projection) {
        JsonNode json;
        if (response == null) {
            ObjectNode closed = JsonNodeFactory.instance.objectNode();
            closed.put("connectionClosed", true);
            json = closed;
        } else {
            json = projection.apply(RequestConvertToJson.response(response, version));
        }
        for (Step s : transcript) {
            if (s.name().equals(step)) throw new IllegalStateException("step named twice: " + step);
        }
        transcript.add(new Step(step, Json.mask(json, uuidSymbols), ties));
    }

    /**
     * Gives the ids of {@code topics} the symbols {@code <topicId:NAME>} (Metadata, unrecorded),
     * so that masked ids do not depend on which topic a server happens to list first.
     */
    void nameTopics(String... topics) throws IOException {
        AbstractResponse r = send(Req.metadata(topics), (short) 12, "diff-suite");
        if (r == null) throw new IOException(server + ": no Metadata answer");
        ((org.apache.kafka.common.requests.MetadataResponse) r).data().topics().forEach(
                t -> uuidSymbols.put(t.topicId().toString(), "<topicId:" + t.name() + ">"));
    }

    /** Records a value the scenario computed itself (e.g. an invariant's outcome). */
    void note(String step, JsonNode json) {
        transcript.add(new Step(step, json, false));
    }

    /**
     * Sends {@code request} (built anew each time) every 100 ms until {@code done} holds, at
     * most for {@code maxMs}; records only the last answer, so the number of polls (which
     * depends on each server's timing) is not compared. Throws if the state is not reached.
     */
    AbstractResponse poll(String step, Supplier<AbstractRequest.Builder<?>> request, short version,
            String clientId, boolean ties, Predicate<AbstractResponse> done, long maxMs)
            throws IOException, InterruptedException {
        long deadline = System.currentTimeMillis() + maxMs;
        while (true) {
            AbstractResponse response = send(request.get(), version, clientId);
            if (response != null && done.test(response)) {
                record(step, response, version, ties, Function.identity());
                return response;
            }
            if (System.currentTimeMillis() > deadline) {
                record(step, response, version, ties, Function.identity());
                throw new AssertionError(server + ": step '" + step + "' did not reach its state in "
                        + maxMs + " ms; last answer: "
                        + (response == null ? "connection closed"
                                : RequestConvertToJson.response(response, version)));
            }
            Thread.sleep(100);
        }
    }

    @Override
    public void close() {
        client.close();
        if (controllerClient != null) controllerClient.close();
    }
}
