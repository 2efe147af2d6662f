package io.kcoord.interop.diff;

import static io.kcoord.interop.diff.Scenario.Pair.MAIN;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;
import java.util.function.Supplier;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.message.AddOffsetsToTxnRequestData;
import org.apache.kafka.common.message.AddPartitionsToTxnRequestData;
import org.apache.kafka.common.message.DescribeProducersRequestData;
import org.apache.kafka.common.message.DescribeTransactionsRequestData;
import org.apache.kafka.common.message.EndTxnRequestData;
import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.message.FindCoordinatorRequestData;
import org.apache.kafka.common.message.InitProducerIdRequestData;
import org.apache.kafka.common.message.ListOffsetsRequestData;
import org.apache.kafka.common.message.ListTransactionsRequestData;
import org.apache.kafka.common.message.OffsetFetchRequestData;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.message.TxnOffsetCommitRequestData;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.ControlRecordType;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.AddOffsetsToTxnRequest;
import org.apache.kafka.common.requests.AddPartitionsToTxnRequest;
import org.apache.kafka.common.requests.DescribeProducersRequest;
import org.apache.kafka.common.requests.DescribeTransactionsRequest;
import org.apache.kafka.common.requests.DescribeTransactionsResponse;
import org.apache.kafka.common.requests.EndTxnRequest;
import org.apache.kafka.common.requests.EndTxnResponse;
import org.apache.kafka.common.requests.FetchRequest;
import org.apache.kafka.common.requests.FetchResponse;
import org.apache.kafka.common.requests.FindCoordinatorRequest;
import org.apache.kafka.common.requests.FindCoordinatorResponse;
import org.apache.kafka.common.requests.InitProducerIdRequest;
import org.apache.kafka.common.requests.InitProducerIdResponse;
import org.apache.kafka.common.requests.ListOffsetsRequest;
import org.apache.kafka.common.requests.ListOffsetsResponse;
import org.apache.kafka.common.requests.ListTransactionsRequest;
import org.apache.kafka.common.requests.OffsetFetchRequest;
import org.apache.kafka.common.requests.OffsetFetchResponse;
import org.apache.kafka.common.requests.ProduceRequest;
import org.apache.kafka.common.requests.TxnOffsetCommitRequest;

/**
 * Transactions on the wire (FindCoordinator TRANSACTION, InitProducerId, AddPartitionsToTxn,
 * AddOffsetsToTxn, TxnOffsetCommit, EndTxn, transactional Produce, Fetch and ListOffsets at
 * READ_COMMITTED, OffsetFetch with RequireStable, DescribeTransactions, ListTransactions,
 * DescribeProducers), in both forms Kafka 4.4 serves: transaction.version 1 as librdkafka and
 * older Java clients speak it (AddPartitionsToTxn v3, EndTxn v4, Produce v11, TxnOffsetCommit
 * v3), and transaction.version 2 as Kafka 4.4's Java producer does (InitProducerId v5, Produce
 * v12+ adding the partition implicitly, EndTxn v5 bumping the epoch).
 *
 * <p>Producer ids are allocated by each server its own way: they become symbols ({@code
 * <pid#1>}, by order of first appearance in the scenario), and so do coordinator times; epochs,
 * offsets and errors are compared as they are. After an EndTxn the coordinator writes its
 * markers asynchronously, so steps that could meet CONCURRENT_TRANSACTIONS (or a coordinator
 * still loading) poll until the answer is final and record only that one.
 */
final class TransactionScenarios {
    private TransactionScenarios() {}

    static List<Scenario> all() {
        List<Scenario> all = new ArrayList<>();
        all.add(new Scenario("txn-find-coordinator", MAIN, Map.of(), TransactionScenarios::findCoordinator));
        all.add(new Scenario("txn-init-producer-id", MAIN, Map.of(), TransactionScenarios::initProducerId));
        all.add(new Scenario("txn-init-producer-id-errors", MAIN, Map.of(), TransactionScenarios::initProducerIdErrors));
        all.add(new Scenario("txn-init-aborts-ongoing", MAIN, Map.of("txn-init-aborts-ongoing-t", 1), TransactionScenarios::initAbortsOngoing));
        all.add(new Scenario("txn-add-partitions-v3", MAIN, Map.of("txn-add-partitions-v3-t", 2), TransactionScenarios::addPartitionsV3));
        all.add(new Scenario("txn-add-partitions-batched", MAIN, Map.of("txn-add-partitions-batched-t", 2), TransactionScenarios::addPartitionsBatched));
        all.add(new Scenario("txn-fenced-epochs", MAIN, Map.of("txn-fenced-epochs-t", 1), TransactionScenarios::fencedEpochs));
        all.add(new Scenario("txn-offsets-simple-group", MAIN, Map.of("txn-offsets-simple-group-t", 1), TransactionScenarios::offsetsSimpleGroup));
        all.add(new Scenario("txn-offsets-streams-member", MAIN, Map.of("txn-offsets-streams-member-in", 2), TransactionScenarios::offsetsStreamsMember));
        all.add(new Scenario("txn-end-v4", MAIN, Map.of("txn-end-v4-t", 1), TransactionScenarios::endV4));
        all.add(new Scenario("txn-end-v5", MAIN, Map.of("txn-end-v5-t", 2), TransactionScenarios::endV5));
        all.add(new Scenario("txn-end-without-transaction", MAIN, Map.of(), TransactionScenarios::endWithoutTransaction));
        all.add(new Scenario("txn-produce-not-added", MAIN, Map.of("txn-produce-not-added-t", 1), TransactionScenarios::produceNotAdded));
        all.add(new Scenario("txn-fetch-read-committed", MAIN, Map.of("txn-fetch-read-committed-t", 1), TransactionScenarios::fetchReadCommitted));
        all.add(new Scenario("txn-list-offsets-lso", MAIN, Map.of("txn-list-offsets-lso-t", 1), TransactionScenarios::listOffsetsLso));
        all.add(new Scenario("txn-offset-fetch-require-stable", MAIN, Map.of("txn-offset-fetch-require-stable-t", 2),
                TransactionScenarios::offsetFetchRequireStable));
        all.add(new Scenario("txn-describe-transactions", MAIN, Map.of("txn-describe-transactions-t", 2), TransactionScenarios::describeTransactions));
        all.add(new Scenario("txn-list-transactions", MAIN, Map.of("txn-list-transactions-t", 1), TransactionScenarios::listTransactions));
        all.add(new Scenario("txn-describe-producers", MAIN, Map.of("txn-describe-producers-t", 2), TransactionScenarios::describeProducers));
        return all;
    }

    // ---------------------------------------------------------------- normalising

    /** Timestamps of the records the scenarios write (so DescribeProducers' lastTimestamp is ours). */
    static final long TS = 1_700_000_000_000L;

    /** Producer ids and coordinator times of one side's run, as symbols. */
    static final class Ids {
        private final Map<Long, String> pids = new HashMap<>();

        JsonNode mask(JsonNode json) {
            JsonNode copy = json.deepCopy();
            maskInPlace(copy);
            return copy;
        }

        private void maskInPlace(JsonNode node) {
            if (node instanceof ObjectNode obj) {
                List<String> names = new ArrayList<>();
                obj.fieldNames().forEachRemaining(names::add);
                // An entry that carries an error has Kafka's defaults (producer id 0, time 0): compared as they are.
                boolean failed = obj.path("errorCode").asInt(0) != 0;
                for (String name : names) {
                    JsonNode v = obj.get(name);
                    if (failed && (name.equals("producerId") || name.equals("transactionStartTimeMs"))) continue;
                    if ((name.equals("producerId") || name.equals("producerIdFilters")) && v.isNumber() && v.asLong() >= 0) {
                        obj.set(name, TextNode.valueOf(pids.computeIfAbsent(v.asLong(), k -> "<pid#" + (pids.size() + 1) + ">")));
                    } else if ((name.equals("transactionStartTimeMs") || name.equals("lastTimestamp")) && v.isNumber()
                            && v.asLong() >= 0 && v.asLong() != TS) {
                        obj.set(name, TextNode.valueOf("<time>"));
                    } else {
                        maskInPlace(v);
                    }
                }
                // Kafka builds these from hash sets: sorted, so only their content counts.
                for (String arrayName : List.of("topics", "topicResults", "transactionStates")) {
                    if (obj.get(arrayName) instanceof ArrayNode arr) sortArray(arr);
                }
                for (String arrayName : List.of("partitions", "resultsByPartition", "activeProducers")) {
                    if (obj.get(arrayName) instanceof ArrayNode arr) sortArray(arr);
                }
            } else if (node instanceof ArrayNode arr) {
                arr.forEach(this::maskInPlace);
            }
        }

        private static void sortArray(ArrayNode arr) {
            List<JsonNode> items = new ArrayList<>();
            arr.forEach(items::add);
            items.sort(Comparator.comparing(TransactionScenarios::sortKey));
            arr.removeAll();
            items.forEach(arr::add);
        }
    }

    private static String sortKey(JsonNode n) {
        if (n.isNumber()) return String.format("%012d", n.asLong());
        for (String k : List.of("topic", "name", "transactionalId", "partitionIndex")) {
            if (n.has(k)) {
                JsonNode v = n.get(k);
                return v.isNumber() ? String.format("%012d", v.asLong()) : v.asText();
            }
        }
        return n.toString();
    }

    /** What one run of a scenario keeps: the side and its symbols. */
    static final class Run {
        final Side s;
        final Ids ids = new Ids();

        Run(Side s) {
            this.s = s;
        }

        AbstractResponse call(String step, AbstractRequest.Builder<?> b, int version) throws Exception {
            return s.call(step, b, (short) version, ids::mask);
        }

        /** Sends until the answer carries none of {@code retriable}; records only the last one. */
        AbstractResponse settle(String step, Supplier<AbstractRequest.Builder<?>> b, int version, Set<Errors> retriable)
                throws Exception {
            long deadline = System.currentTimeMillis() + 30_000;
            AbstractResponse r;
            while (true) {
                r = s.send(b.get(), (short) version, "diff-suite");
                if (r != null && r.errorCounts().keySet().stream().noneMatch(retriable::contains)) break;
                if (System.currentTimeMillis() > deadline) break;
                Thread.sleep(100);
            }
            s.record(step, r, (short) version, false, ids::mask);
            return r;
        }

        AbstractResponse settle(String step, Supplier<AbstractRequest.Builder<?>> b, int version) throws Exception {
            return settle(step, b, version, RETRIABLE);
        }

        /** Polls DescribeTransactions until {@code tid} is in {@code state}; records that answer. */
        void awaitState(String step, String tid, String state) throws Exception {
            long deadline = System.currentTimeMillis() + 30_000;
            while (true) {
                AbstractResponse r = s.send(describeTxn(tid), (short) 0, "diff-suite");
                boolean done = r instanceof DescribeTransactionsResponse d
                        && d.data().transactionStates().get(0).transactionState().equals(state);
                if (done || r == null || System.currentTimeMillis() > deadline) {
                    s.record(step, r, (short) 0, false, ids::mask);
                    if (!done) throw new AssertionError(s.server + ": " + tid + " not " + state + " in 30 s");
                    return;
                }
                Thread.sleep(100);
            }
        }

        void note(String step, JsonNode json) {
            s.note(step, ids.mask(json));
        }
    }

    /** The coordinator is loading or moving, or an earlier transaction's markers are not all written yet. */
    static final Set<Errors> RETRIABLE = Set.of(Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.COORDINATOR_NOT_AVAILABLE,
            Errors.NOT_COORDINATOR, Errors.CONCURRENT_TRANSACTIONS);

    // ---------------------------------------------------------------- requests

    static AbstractRequest.Builder<?> findTxnCoordinator(String... tids) {
        return new FindCoordinatorRequest.Builder(new FindCoordinatorRequestData()
                .setKeyType(FindCoordinatorRequest.CoordinatorType.TRANSACTION.id()).setCoordinatorKeys(List.of(tids)));
    }

    /** Waits (unrecorded) until the server has a transaction coordinator for {@code tid}. */
    static void ready(Side s, String tid) throws Exception {
        long deadline = System.currentTimeMillis() + 60_000;
        while (true) {
            AbstractResponse r = s.send(findTxnCoordinator(tid), (short) 6, "diff-suite");
            if (!(r instanceof FindCoordinatorResponse fc)) throw new IllegalStateException("FindCoordinator: connection closed");
            Errors error = Errors.forCode(fc.data().coordinators().get(0).errorCode());
            if (error == Errors.NONE) return;
            // Only a coordinator still on its way is waited for; any other answer ends the scenario.
            if (!RETRIABLE.contains(error)) throw new IllegalStateException("FindCoordinator TRANSACTION: " + error);
            if (System.currentTimeMillis() > deadline) throw new IllegalStateException("no transaction coordinator");
            Thread.sleep(200);
        }
    }

    static AbstractRequest.Builder<?> init(String tid, int timeoutMs, long pid, int epoch) {
        return new InitProducerIdRequest.Builder(new InitProducerIdRequestData().setTransactionalId(tid)
                .setTransactionTimeoutMs(timeoutMs).setProducerId(pid).setProducerEpoch((short) epoch));
    }

    /** InitProducerId v5 for {@code tid} (60 s timeout), settled; returns {pid, epoch}. */
    static long[] initTxn(Run r, String step, String tid) throws Exception {
        ready(r.s, tid);
        InitProducerIdResponse ip = (InitProducerIdResponse) r.settle(step, () -> init(tid, 60_000, -1, -1), 5);
        return new long[] {ip.data().producerId(), ip.data().producerEpoch()};
    }

    static AbstractRequest.Builder<?> addPartitions(String tid, long pid, long epoch, List<TopicPartition> tps) {
        return AddPartitionsToTxnRequest.Builder.forClient(tid, pid, (short) epoch, tps);
    }

    /** AddPartitionsToTxn v4+ (the batched form Kafka's brokers send each other), one transaction. */
    static AbstractRequest.Builder<?> addPartitionsBatched(String tid, long pid, long epoch, boolean verifyOnly,
            String topic, Integer... partitions) {
        AddPartitionsToTxnRequestData.AddPartitionsToTxnTopicCollection topics =
                new AddPartitionsToTxnRequestData.AddPartitionsToTxnTopicCollection();
        topics.add(new AddPartitionsToTxnRequestData.AddPartitionsToTxnTopic().setName(topic).setPartitions(List.of(partitions)));
        AddPartitionsToTxnRequestData.AddPartitionsToTxnTransactionCollection txns =
                new AddPartitionsToTxnRequestData.AddPartitionsToTxnTransactionCollection();
        txns.add(new AddPartitionsToTxnRequestData.AddPartitionsToTxnTransaction().setTransactionalId(tid)
                .setProducerId(pid).setProducerEpoch((short) epoch).setVerifyOnly(verifyOnly).setTopics(topics));
        return AddPartitionsToTxnRequest.Builder.forBroker(txns);
    }

    static AbstractRequest.Builder<?> addOffsets(String tid, long pid, long epoch, String group) {
        return new AddOffsetsToTxnRequest.Builder(new AddOffsetsToTxnRequestData().setTransactionalId(tid)
                .setProducerId(pid).setProducerEpoch((short) epoch).setGroupId(group));
    }

    static AbstractRequest.Builder<?> txnCommit(String tid, long pid, long epoch, String group, String member, int generation,
            String topic, int partition, long offset) {
        return TxnOffsetCommitRequest.Builder.forTopicNames(new TxnOffsetCommitRequestData().setTransactionalId(tid)
                .setGroupId(group).setProducerId(pid).setProducerEpoch((short) epoch).setMemberId(member)
                .setGenerationIdOrMemberEpoch(generation).setTopics(List.of(new TxnOffsetCommitRequestData.TxnOffsetCommitRequestTopic()
                        .setName(topic).setPartitions(List.of(new TxnOffsetCommitRequestData.TxnOffsetCommitRequestPartition()
                                .setPartitionIndex(partition).setCommittedOffset(offset).setCommittedMetadata("m" + offset))))),
                true);
    }

    static AbstractRequest.Builder<?> endTxn(String tid, long pid, long epoch, boolean commit, int version) {
        return new EndTxnRequest.Builder(new EndTxnRequestData().setTransactionalId(tid).setProducerId(pid)
                .setProducerEpoch((short) epoch).setCommitted(commit), version >= 5);
    }

    static AbstractRequest.Builder<?> describeTxn(String... tids) {
        return new DescribeTransactionsRequest.Builder(new DescribeTransactionsRequestData().setTransactionalIds(List.of(tids)));
    }

    static AbstractRequest.Builder<?> listTxn(List<String> states, List<Long> pids) {
        return new ListTransactionsRequest.Builder(new ListTransactionsRequestData().setStateFilters(states)
                .setProducerIdFilters(pids));
    }

    static AbstractRequest.Builder<?> describeProducers(String topic, Integer... partitions) {
        DescribeProducersRequest.Builder b = new DescribeProducersRequest.Builder(new DescribeProducersRequestData());
        b.addTopic(topic).setPartitionIndexes(List.of(partitions));
        return b;
    }

    static MemoryRecords txnBatch(long pid, long epoch, int seq, String... values) {
        SimpleRecord[] records = new SimpleRecord[values.length];
        for (int i = 0; i < values.length; i++) {
            records[i] = new SimpleRecord(TS, ("k" + i).getBytes(StandardCharsets.UTF_8), values[i].getBytes(StandardCharsets.UTF_8));
        }
        return MemoryRecords.withTransactionalRecords(Compression.NONE, pid, (short) epoch, seq, records);
    }

    static MemoryRecords plainBatch(String... values) {
        SimpleRecord[] records = new SimpleRecord[values.length];
        for (int i = 0; i < values.length; i++) {
            records[i] = new SimpleRecord(TS, ("k" + i).getBytes(StandardCharsets.UTF_8), values[i].getBytes(StandardCharsets.UTF_8));
        }
        return MemoryRecords.withRecords(Compression.NONE, records);
    }

    /** Produce (by topic name: v3 to v12) of one batch to one partition, acks=all. */
    static AbstractRequest.Builder<?> produce(String tid, String topic, int partition, MemoryRecords records, int version) {
        ProduceRequestData.TopicProduceDataCollection topics = new ProduceRequestData.TopicProduceDataCollection();
        topics.add(new ProduceRequestData.TopicProduceData().setName(topic).setPartitionData(List.of(
                new ProduceRequestData.PartitionProduceData().setIndex(partition).setRecords(records))));
        return ProduceRequest.builder(new ProduceRequestData().setAcks((short) -1).setTimeoutMs(30_000)
                .setTransactionalId(tid).setTopicData(topics), version <= 11);
    }

    static AbstractRequest.Builder<?> listOffsets(String topic, int partitions, IsolationLevel isolation) {
        List<ListOffsetsRequestData.ListOffsetsPartition> ps = new ArrayList<>();
        for (int p = 0; p < partitions; p++) {
            ps.add(new ListOffsetsRequestData.ListOffsetsPartition().setPartitionIndex(p).setTimestamp(-1L));
        }
        return ListOffsetsRequest.Builder.forConsumer(false, isolation)
                .setTargetTimes(List.of(new ListOffsetsRequestData.ListOffsetsTopic().setName(topic).setPartitions(ps)));
    }

    static AbstractRequest.Builder<?> fetch(String topic, int partition, long offset, IsolationLevel isolation) {
        Map<TopicPartition, FetchRequest.PartitionData> data = new LinkedHashMap<>();
        data.put(new TopicPartition(topic, partition), new FetchRequest.PartitionData(Uuid.ZERO_UUID, offset, -1, 1 << 20, Optional.empty()));
        return FetchRequest.Builder.forConsumer((short) 12, 0, 0, data).isolationLevel(isolation).setMaxBytes(1 << 20);
    }

    /**
     * What a consumer reading each partition from offset 0 at {@code isolation} with Fetch v12
     * gets, as JSON: the last answer's offsets (high watermark, last stable, log start), every
     * aborted transaction any answer listed, and every batch (transactional, control, producer,
     * epoch, sequence, the records or the control record's type; no timestamps). It fetches
     * again from after the last batch until the end (Kafka 4.4 may answer one batch at a time),
     * so how the server cuts its answers is not compared.
     */
    static void recordFetch(Run r, String step, String topic, int partitions, IsolationLevel isolation) throws Exception {
        ObjectNode out = JsonNodeFactory.instance.objectNode();
        ArrayNode parts = out.putArray("partitions");
        for (int partition = 0; partition < partitions; partition++) {
            ObjectNode pn = parts.addObject();
            pn.put("partitionIndex", partition);
            ArrayNode batches = JsonNodeFactory.instance.arrayNode();
            Map<String, JsonNode> aborted = new LinkedHashMap<>();
            boolean anyAborted = false;
            long next = 0;
            for (int round = 0; round < 50; round++) {
                AbstractResponse resp = r.s.send(fetch(topic, partition, next, isolation), (short) 12, "diff-suite");
                if (!(resp instanceof FetchResponse f)) {
                    pn.put("connectionClosed", true);
                    break;
                }
                FetchResponseData.PartitionData p = f.data().responses().get(0).partitions().get(0);
                pn.put("errorCode", p.errorCode());
                pn.put("highWatermark", p.highWatermark());
                pn.put("lastStableOffset", p.lastStableOffset());
                pn.put("logStartOffset", p.logStartOffset());
                if (p.abortedTransactions() != null) {
                    anyAborted = true;
                    for (FetchResponseData.AbortedTransaction a : p.abortedTransactions()) {
                        aborted.put(a.producerId() + "@" + a.firstOffset(), JsonNodeFactory.instance.objectNode()
                                .put("producerId", a.producerId()).put("firstOffset", a.firstOffset()));
                    }
                }
                long before = next;
                if (p.records() instanceof MemoryRecords mr) {
                    for (RecordBatch b : mr.batches()) {
                        if (b.lastOffset() < next) continue;
                        ObjectNode bn = batches.addObject();
                        bn.put("baseOffset", b.baseOffset());
                        bn.put("lastOffset", b.lastOffset());
                        bn.put("transactional", b.isTransactional());
                        bn.put("control", b.isControlBatch());
                        bn.put("producerId", b.producerId());
                        bn.put("producerEpoch", b.producerEpoch());
                        bn.put("baseSequence", b.baseSequence());
                        ArrayNode recs = bn.putArray("records");
                        for (Record rec : b) {
                            recs.add("offset " + rec.offset() + ": " + (b.isControlBatch()
                                    ? ControlRecordType.parse(rec.key()).toString()
                                    : StandardCharsets.UTF_8.decode(rec.value()).toString()));
                        }
                        next = b.lastOffset() + 1;
                    }
                }
                long end = isolation == IsolationLevel.READ_COMMITTED ? p.lastStableOffset() : p.highWatermark();
                if (p.errorCode() != 0 || next >= end || next == before) break;
            }
            if (anyAborted) {
                ArrayNode ab = pn.putArray("abortedTransactions");
                aborted.values().forEach(ab::add);
            } else {
                pn.putNull("abortedTransactions");
            }
            pn.set("batches", batches);
        }
        r.note(step, out);
    }

    static AbstractRequest.Builder<?> offsetFetchStable(String group, String topic, int partitions, int version) {
        List<Integer> ps = new ArrayList<>();
        for (int p = 0; p < partitions; p++) ps.add(p);
        if (version >= 8) {
            return OffsetFetchRequest.Builder.forTopicNames(new OffsetFetchRequestData().setRequireStable(true)
                    .setGroups(List.of(new OffsetFetchRequestData.OffsetFetchRequestGroup().setGroupId(group)
                            .setTopics(List.of(new OffsetFetchRequestData.OffsetFetchRequestTopics().setName(topic)
                                    .setPartitionIndexes(ps))))), false);
        }
        return OffsetFetchRequest.Builder.forTopicNames(new OffsetFetchRequestData().setGroupId(group).setRequireStable(true)
                .setTopics(List.of(new OffsetFetchRequestData.OffsetFetchRequestTopic().setName(topic).setPartitionIndexes(ps))), false);
    }

    static AbstractRequest.Builder<?> offsetFetchUnstable(String group, String topic, int partitions) {
        List<Integer> ps = new ArrayList<>();
        for (int p = 0; p < partitions; p++) ps.add(p);
        return OffsetFetchRequest.Builder.forTopicNames(new OffsetFetchRequestData().setRequireStable(false)
                .setGroups(List.of(new OffsetFetchRequestData.OffsetFetchRequestGroup().setGroupId(group)
                        .setTopics(List.of(new OffsetFetchRequestData.OffsetFetchRequestTopics().setName(topic)
                                .setPartitionIndexes(ps))))), false);
    }

    static TopicPartition tp(String topic, int p) {
        return new TopicPartition(topic, p);
    }

    // ---------------------------------------------------------------- scenarios

    static void findCoordinator(Side side) throws Exception {
        Run r = new Run(side);
        String tid = "txn-find-coordinator";
        r.settle("FindCoordinator v6 TRANSACTION", () -> findTxnCoordinator(tid, tid + "-2"), 6,
                Set.of(Errors.COORDINATOR_NOT_AVAILABLE, Errors.COORDINATOR_LOAD_IN_PROGRESS));
        r.call("FindCoordinator v3 TRANSACTION", new FindCoordinatorRequest.Builder(new FindCoordinatorRequestData()
                .setKey(tid).setKeyType(FindCoordinatorRequest.CoordinatorType.TRANSACTION.id())), 3);
        r.call("FindCoordinator v1 TRANSACTION", new FindCoordinatorRequest.Builder(new FindCoordinatorRequestData()
                .setKey(tid).setKeyType(FindCoordinatorRequest.CoordinatorType.TRANSACTION.id())), 1);
        r.call("FindCoordinator v6 empty transactional id", findTxnCoordinator(""), 6);
    }

    static void initProducerId(Side side) throws Exception {
        Run r = new Run(side);
        String tid = "txn-init-producer-id";
        long[] first = initTxn(r, "new transactional id (v5)", tid);
        long pid = first[0];
        r.settle("re-init without a producer id: epoch bump", () -> init(tid, 60_000, -1, -1), 5);
        r.settle("re-init with the current id and epoch (KIP-360)", () -> init(tid, 60_000, pid, 1), 5);
        r.settle("re-init with an older epoch", () -> init(tid, 60_000, pid, 0), 5);
        r.settle("re-init with another producer id", () -> init(tid, 60_000, pid + 1000, 2), 5);
        r.settle("re-init v1", () -> init(tid, 60_000, -1, -1), 1);
        r.settle("re-init v4 with the current id and epoch", () -> init(tid, 60_000, pid, 3), 4);
        r.call("describe", describeTxn(tid), 0);
        String other = tid + "-other";
        r.settle("another transactional id (v3)", () -> init(other, 30_000, -1, -1), 3);
    }

    static void initProducerIdErrors(Side side) throws Exception {
        Run r = new Run(side);
        String tid = "txn-init-producer-id-errors";
        ready(side, tid);
        r.settle("timeout above transaction.max.timeout.ms", () -> init(tid, 900_001, -1, -1), 5);
        // (A timeout of 0 or less, and an empty transactional id, are refused by Kafka's
        // InitProducerIdRequest builder: not sendable here.)
        r.settle("the id never got one", () -> init(tid, 60_000, -1, -1), 5);
        r.settle("timeout above the maximum for a known id", () -> init(tid, 900_001, -1, -1), 5);
        r.call("describe", describeTxn(tid), 0);
        r.settle("no transactional id (idempotent)", () -> init(null, 900_001, -1, -1), 5, Set.of());
    }

    static void initAbortsOngoing(Side side) throws Exception {
        Run r = new Run(side);
        String tid = "txn-init-aborts-ongoing";
        String t = tid + "-t";
        long[] p = initTxn(r, "init", tid);
        r.call("add the partition (v3)", addPartitions(tid, p[0], p[1], List.of(tp(t, 0))), 3);
        r.call("produce (v11)", produce(tid, t, 0, txnBatch(p[0], p[1], 0, "open"), 11), 11);
        // A new InitProducerId aborts the open transaction; it answers CONCURRENT_TRANSACTIONS until the abort is written.
        r.settle("re-init while a transaction is open", () -> init(tid, 60_000, -1, -1), 5);
        r.call("describe after", describeTxn(tid), 0);
        recordFetch(r, "fetch read_uncommitted", t, 1, IsolationLevel.READ_UNCOMMITTED);
    }

    static void addPartitionsV3(Side side) throws Exception {
        Run r = new Run(side);
        String tid = "txn-add-partitions-v3";
        String t = tid + "-t";
        long[] p = initTxn(r, "init", tid);
        r.call("add an unknown topic beside a known one", addPartitions(tid, p[0], p[1], List.of(tp(t, 0), tp(tid + "-nope", 0))), 3);
        r.call("add a partition past the topic's count", addPartitions(tid, p[0], p[1], List.of(tp(t, 0), tp(t, 7))), 3);
        r.call("add two partitions", addPartitions(tid, p[0], p[1], List.of(tp(t, 0), tp(t, 1))), 3);
        r.call("add them again", addPartitions(tid, p[0], p[1], List.of(tp(t, 0), tp(t, 1))), 3);
        r.call("add v0", addPartitions(tid, p[0], p[1], List.of(tp(t, 1))), 0);
        r.call("add to __consumer_offsets", addPartitions(tid, p[0], p[1], List.of(tp("__consumer_offsets", 0))), 3);
        r.call("describe", describeTxn(tid), 0);
        r.call("add v5 (TV2 version, client form is v3 at most)", addPartitionsBatched(tid, p[0], p[1], false, t, 0), 5);
        r.call("end (abort, v4)", endTxn(tid, p[0], p[1], false, 4), 4);
        r.awaitState("describe after the abort", tid, "CompleteAbort");
    }

    static void addPartitionsBatched(Side side) throws Exception {
        Run r = new Run(side);
        String tid = "txn-add-partitions-batched";
        String t = tid + "-t";
        long[] p = initTxn(r, "init", tid);
        r.call("verify only a partition not in the transaction (v4)", addPartitionsBatched(tid, p[0], p[1], true, t, 0), 4);
        r.call("add (v4, not verify only)", addPartitionsBatched(tid, p[0], p[1], false, t, 0), 4);
        r.call("verify only (v5) after the add", addPartitionsBatched(tid, p[0], p[1], true, t, 0, 1), 5);
        r.call("verify only with a wrong epoch", addPartitionsBatched(tid, p[0], p[1] + 1, true, t, 0), 5);
        r.call("verify only for an unknown transactional id", addPartitionsBatched(tid + "-nope", p[0], p[1], true, t, 0), 5);
        r.call("describe", describeTxn(tid), 0);
        r.call("end (abort, v4)", endTxn(tid, p[0], p[1], false, 4), 4);
        r.awaitState("describe after the abort", tid, "CompleteAbort");
    }

    static void fencedEpochs(Side side) throws Exception {
        Run r = new Run(side);
        String tid = "txn-fenced-epochs";
        String t = tid + "-t";
        long[] p0 = initTxn(r, "init", tid);
        long[] p = initTxn(r, "init again (epoch 1)", tid);
        for (int v : new int[] {1, 2, 3}) {
            r.call("add with the old epoch v" + v, addPartitions(tid, p[0], p0[1], List.of(tp(t, 0))), v);
        }
        r.call("add with a newer epoch", addPartitions(tid, p[0], p[1] + 1, List.of(tp(t, 0))), 3);
        r.call("add with another producer id", addPartitions(tid, p[0] + 1000, p[1], List.of(tp(t, 0))), 3);
        r.call("add for an unknown transactional id", addPartitions(tid + "-nope", p[0], p[1], List.of(tp(t, 0))), 3);
        r.call("add", addPartitions(tid, p[0], p[1], List.of(tp(t, 0))), 3);
        for (int v : new int[] {1, 2, 4}) {
            r.call("end with the old epoch v" + v, endTxn(tid, p[0], p0[1], false, v), v);
        }
        r.call("add offsets with the old epoch v1", addOffsets(tid, p[0], p0[1], tid + "-g"), 1);
        r.call("add offsets with the old epoch v3", addOffsets(tid, p[0], p0[1], tid + "-g"), 3);
        r.call("produce with the old epoch (v11)", produce(tid, t, 0, txnBatch(p[0], p0[1], 0, "stale"), 11), 11);
        r.call("end (abort)", endTxn(tid, p[0], p[1], false, 4), 4);
        r.awaitState("describe after the abort", tid, "CompleteAbort");
    }

    static void offsetsSimpleGroup(Side side) throws Exception {
        Run r = new Run(side);
        String tid = "txn-offsets-simple-group";
        String t = tid + "-t";
        String g = tid + "-g";
        long[] p = initTxn(r, "init", tid);
        r.call("txn offset commit before add offsets (v3)", txnCommit(tid, p[0], p[1], g, "", -1, t, 0, 5), 3);
        r.settle("add offsets (v3)", () -> addOffsets(tid, p[0], p[1], g), 3);
        r.settle("txn offset commit, no member (v3)", () -> txnCommit(tid, p[0], p[1], g, "", -1, t, 0, 7), 3);
        r.call("txn offset commit to an unknown topic", txnCommit(tid, p[0], p[1], g, "", -1, tid + "-nope", 0, 7), 3);
        r.call("txn offset commit with a wrong epoch", txnCommit(tid, p[0], p[1] + 1, g, "", -1, t, 0, 7), 3);
        r.call("txn offset commit by a member of a group with none (v3)", txnCommit(tid, p[0], p[1], g, "m-1", 3, t, 0, 7), 3);
        r.call("offset fetch (not stable) while open", offsetFetchUnstable(g, t, 1), 9);
        r.call("describe", describeTxn(tid), 0);
        r.call("end (commit, v4)", endTxn(tid, p[0], p[1], true, 4), 4);
        r.awaitState("describe after the commit", tid, "CompleteCommit");
        r.settle("offset fetch (stable) after the commit", () -> offsetFetchStable(g, t, 1, 9), 9, Set.of(Errors.UNSTABLE_OFFSET_COMMIT));
    }

    static void offsetsStreamsMember(Side side) throws Exception {
        Run r = new Run(side);
        String g = "txn-offsets-streams-member";
        String tid = g + "-tid";
        String t = g + "-in";
        Member a = new Member(side, g, "member-a", Topo.simple(t));
        a.join("join");
        a.hb("ack");
        int e = a.epoch;
        long[] p = initTxn(r, "init", tid);
        r.settle("add offsets", () -> addOffsets(tid, p[0], p[1], g), 3);
        r.call("txn offset commit at the member's epoch (v3)", txnCommit(tid, p[0], p[1], g, "member-a", e, t, 0, 11), 3);
        r.call("txn offset commit at an older epoch", txnCommit(tid, p[0], p[1], g, "member-a", e - 1, t, 0, 12), 3);
        r.call("txn offset commit at a newer epoch", txnCommit(tid, p[0], p[1], g, "member-a", e + 1, t, 0, 12), 3);
        r.call("txn offset commit by an unknown member", txnCommit(tid, p[0], p[1], g, "member-zz", e, t, 0, 12), 3);
        r.call("txn offset commit without a member (generation -1)", txnCommit(tid, p[0], p[1], g, "", -1, t, 1, 13), 3);
        r.call("end (commit)", endTxn(tid, p[0], p[1], true, 4), 4);
        r.awaitState("describe after the commit", tid, "CompleteCommit");
        r.settle("offset fetch (stable)", () -> offsetFetchStable(g, t, 2, 9), 9, Set.of(Errors.UNSTABLE_OFFSET_COMMIT));
        a.leave("leave", -1);
    }

    static void endV4(Side side) throws Exception {
        Run r = new Run(side);
        String tid = "txn-end-v4";
        String t = tid + "-t";
        long[] p = initTxn(r, "init", tid);
        r.call("add", addPartitions(tid, p[0], p[1], List.of(tp(t, 0))), 3);
        r.call("produce (v11)", produce(tid, t, 0, txnBatch(p[0], p[1], 0, "one", "two"), 11), 11);
        r.call("commit (v4)", endTxn(tid, p[0], p[1], true, 4), 4);
        r.awaitState("describe after the commit", tid, "CompleteCommit");
        r.call("commit again once complete (a retry)", endTxn(tid, p[0], p[1], true, 4), 4);
        r.call("abort once committed", endTxn(tid, p[0], p[1], false, 4), 4);
        r.settle("add for a second transaction", () -> addPartitions(tid, p[0], p[1], List.of(tp(t, 0))), 3);
        r.call("produce (v11) the second", produce(tid, t, 0, txnBatch(p[0], p[1], 2, "three"), 11), 11);
        r.call("abort (v4)", endTxn(tid, p[0], p[1], false, 4), 4);
        r.awaitState("describe after the abort", tid, "CompleteAbort");
        r.call("abort again once complete", endTxn(tid, p[0], p[1], false, 4), 4);
        recordFetch(r, "fetch read_uncommitted", t, 1, IsolationLevel.READ_UNCOMMITTED);
    }

    static void endV5(Side side) throws Exception {
        Run r = new Run(side);
        String tid = "txn-end-v5";
        String t = tid + "-t";
        long[] p = initTxn(r, "init", tid);
        // Transaction version 2: Produce v12 adds the partition itself (no AddPartitionsToTxn).
        r.call("produce (v12) to partition 0", produce(tid, t, 0, txnBatch(p[0], p[1], 0, "a", "b"), 12), 12);
        r.call("produce (v12) to partition 1", produce(tid, t, 1, txnBatch(p[0], p[1], 0, "c"), 12), 12);
        r.call("describe", describeTxn(tid), 0);
        EndTxnResponse end = (EndTxnResponse) r.call("commit (v5): the epoch is bumped", endTxn(tid, p[0], p[1], true, 5), 5);
        long epoch = end.data().producerEpoch();
        r.awaitState("describe after the commit", tid, "CompleteCommit");
        r.call("commit again with the old epoch (a retry)", endTxn(tid, p[0], p[1], true, 5), 5);
        r.call("abort with the old epoch", endTxn(tid, p[0], p[1], false, 5), 5);
        r.settle("produce (v12) the second transaction at the new epoch", () -> produce(tid, t, 0, txnBatch(p[0], epoch, 0, "d"), 12), 12);
        r.call("produce (v12) with the old epoch", produce(tid, t, 1, txnBatch(p[0], p[1], 1, "e"), 12), 12);
        EndTxnResponse abort = (EndTxnResponse) r.call("abort (v5)", endTxn(tid, p[0], epoch, false, 5), 5);
        r.awaitState("describe after the abort", tid, "CompleteAbort");
        long epoch2 = abort.data().producerEpoch();
        r.call("abort with no transaction (v5)", endTxn(tid, p[0], epoch2, false, 5), 5);
        // Once that abort's markers are written: while they are, the answer is
        // CONCURRENT_TRANSACTIONS, and how long that lasts is the server's timing.
        r.awaitState("aborted again", tid, "CompleteAbort");
        r.call("commit with no transaction (v5)", endTxn(tid, p[0], epoch2, true, 5), 5);
        recordFetch(r, "fetch read_uncommitted", t, 2, IsolationLevel.READ_UNCOMMITTED);
        recordFetch(r, "fetch read_committed", t, 2, IsolationLevel.READ_COMMITTED);
    }

    static void endWithoutTransaction(Side side) throws Exception {
        Run r = new Run(side);
        String tid = "txn-end-without-transaction";
        long[] p = initTxn(r, "init", tid);
        for (int v : new int[] {0, 3, 4}) {
            r.call("commit with no transaction v" + v, endTxn(tid, p[0], p[1], true, v), v);
            r.call("abort with no transaction v" + v, endTxn(tid, p[0], p[1], false, v), v);
        }
        r.call("end for an unknown transactional id", endTxn(tid + "-nope", p[0], p[1], true, 4), 4);
        r.call("end with another producer id", endTxn(tid, p[0] + 1000, p[1], true, 4), 4);
        r.call("describe", describeTxn(tid), 0);
    }

    static void produceNotAdded(Side side) throws Exception {
        Run r = new Run(side);
        String tid = "txn-produce-not-added";
        String t = tid + "-t";
        long[] p = initTxn(r, "init", tid);
        r.call("produce (v11) to a partition not added", produce(tid, t, 0, txnBatch(p[0], p[1], 0, "x"), 11), 11);
        r.call("produce (v3) to a partition not added", produce(tid, t, 0, txnBatch(p[0], p[1], 0, "x"), 3), 3);
        r.call("produce a transactional batch without a transactional id", produce(null, t, 0, txnBatch(p[0], p[1], 0, "x"), 11), 11);
        r.call("produce (v11) with an unknown transactional id", produce(tid + "-nope", t, 0, txnBatch(p[0], p[1], 0, "x"), 11), 11);
        r.call("describe", describeTxn(tid), 0);
        r.call("add", addPartitions(tid, p[0], p[1], List.of(tp(t, 0))), 3);
        r.call("produce (v11) after the add, sequence 1 first", produce(tid, t, 0, txnBatch(p[0], p[1], 1, "x"), 11), 11);
        r.call("produce (v11) after the add", produce(tid, t, 0, txnBatch(p[0], p[1], 0, "x"), 11), 11);
        r.call("abort", endTxn(tid, p[0], p[1], false, 4), 4);
        r.awaitState("describe after the abort", tid, "CompleteAbort");
        recordFetch(r, "fetch", t, 1, IsolationLevel.READ_UNCOMMITTED);
    }

    static void fetchReadCommitted(Side side) throws Exception {
        Run r = new Run(side);
        String tid = "txn-fetch-read-committed";
        String t = tid + "-t";
        r.call("produce plain records", produce(null, t, 0, plainBatch("plain-0", "plain-1"), 11), 11);
        long[] p = initTxn(r, "init", tid);
        r.call("add", addPartitions(tid, p[0], p[1], List.of(tp(t, 0))), 3);
        r.call("produce the aborted one", produce(tid, t, 0, txnBatch(p[0], p[1], 0, "aborted-0", "aborted-1"), 11), 11);
        r.call("abort", endTxn(tid, p[0], p[1], false, 4), 4);
        r.awaitState("aborted", tid, "CompleteAbort");
        r.settle("add again", () -> addPartitions(tid, p[0], p[1], List.of(tp(t, 0))), 3);
        r.call("produce the committed one", produce(tid, t, 0, txnBatch(p[0], p[1], 2, "committed-0"), 11), 11);
        r.call("commit", endTxn(tid, p[0], p[1], true, 4), 4);
        r.awaitState("committed", tid, "CompleteCommit");
        r.settle("add a third time", () -> addPartitions(tid, p[0], p[1], List.of(tp(t, 0))), 3);
        r.call("produce the open one", produce(tid, t, 0, txnBatch(p[0], p[1], 3, "open-0"), 11), 11);
        recordFetch(r, "fetch read_committed", t, 1, IsolationLevel.READ_COMMITTED);
        recordFetch(r, "fetch read_uncommitted", t, 1, IsolationLevel.READ_UNCOMMITTED);
        r.call("abort the open one", endTxn(tid, p[0], p[1], false, 4), 4);
        r.awaitState("aborted again", tid, "CompleteAbort");
        recordFetch(r, "fetch read_committed at the end", t, 1, IsolationLevel.READ_COMMITTED);
    }

    static void listOffsetsLso(Side side) throws Exception {
        Run r = new Run(side);
        String tid = "txn-list-offsets-lso";
        String t = tid + "-t";
        r.call("produce plain records", produce(null, t, 0, plainBatch("p0", "p1"), 11), 11);
        long[] p = initTxn(r, "init", tid);
        // Transaction version 1 forms (an explicit add, EndTxn v4), which both servers serve.
        r.call("add", addPartitions(tid, p[0], p[1], List.of(tp(t, 0))), 3);
        r.call("produce (v12)", produce(tid, t, 0, txnBatch(p[0], p[1], 0, "open"), 12), 12);
        for (int v : new int[] {2, 8}) {
            r.call("latest read_committed v" + v, listOffsets(t, 1, IsolationLevel.READ_COMMITTED), v);
            r.call("latest read_uncommitted v" + v, listOffsets(t, 1, IsolationLevel.READ_UNCOMMITTED), v);
        }
        r.call("commit (v4)", endTxn(tid, p[0], p[1], true, 4), 4);
        r.awaitState("committed", tid, "CompleteCommit");
        r.s.poll("latest read_committed after the commit", () -> listOffsets(t, 1, IsolationLevel.READ_COMMITTED), (short) 8,
                "diff-suite", false, resp -> ((ListOffsetsResponse) resp).data().topics().get(0).partitions().get(0).offset() == 4,
                30_000);
    }

    static void offsetFetchRequireStable(Side side) throws Exception {
        Run r = new Run(side);
        String tid = "txn-offset-fetch-require-stable";
        String t = tid + "-t";
        String g = tid + "-g";
        long[] p = initTxn(r, "init", tid);
        r.settle("add offsets", () -> addOffsets(tid, p[0], p[1], g), 3);
        r.settle("txn offset commit partition 0", () -> txnCommit(tid, p[0], p[1], g, "", -1, t, 0, 3), 3);
        for (int v : new int[] {7, 8, 9}) {
            r.call("offset fetch require stable v" + v, offsetFetchStable(g, t, 2, v), v);
        }
        r.call("offset fetch not stable", offsetFetchUnstable(g, t, 2), 9);
        r.call("abort", endTxn(tid, p[0], p[1], false, 4), 4);
        r.awaitState("aborted", tid, "CompleteAbort");
        r.settle("offset fetch require stable after the abort", () -> offsetFetchStable(g, t, 2, 9), 9,
                Set.of(Errors.UNSTABLE_OFFSET_COMMIT));
    }

    static void describeTransactions(Side side) throws Exception {
        Run r = new Run(side);
        String tid = "txn-describe-transactions";
        String t = tid + "-t";
        ready(side, tid);
        r.call("an unknown transactional id", describeTxn(tid), 0);
        long[] p = initTxn(r, "init", tid);
        r.call("empty", describeTxn(tid), 0);
        r.call("add", addPartitions(tid, p[0], p[1], List.of(tp(t, 0), tp(t, 1))), 3);
        r.call("ongoing", describeTxn(tid), 0);
        r.call("two ids, one unknown", describeTxn(tid, tid + "-nope"), 0);
        r.call("commit", endTxn(tid, p[0], p[1], true, 4), 4);
        r.awaitState("complete commit", tid, "CompleteCommit");
        r.call("no ids", describeTxn(), 0);
    }

    static void listTransactions(Side side) throws Exception {
        Run r = new Run(side);
        String tid = "txn-list-transactions";
        String t = tid + "-t";
        long[] a = initTxn(r, "init a", tid + "-a");
        long[] b = initTxn(r, "init b", tid + "-b");
        r.call("add a", addPartitions(tid + "-a", a[0], a[1], List.of(tp(t, 0))), 3);
        Function<JsonNode, JsonNode> only = json -> {
            ObjectNode o = (ObjectNode) json;
            ArrayNode kept = JsonNodeFactory.instance.arrayNode();
            for (JsonNode s : json.get("transactionStates")) {
                if (s.get("transactionalId").asText().startsWith(tid)) kept.add(s);
            }
            o.set("transactionStates", kept);
            return o;
        };
        Function<JsonNode, JsonNode> masked = json -> r.ids.mask(only.apply(json));
        side.call("all (v0)", listTxn(List.of(), List.of()), (short) 0, masked);
        side.call("Ongoing", listTxn(List.of("Ongoing"), List.of()), (short) 0, masked);
        side.call("Empty", listTxn(List.of("Empty"), List.of()), (short) 0, masked);
        side.call("an unknown state", listTxn(List.of("Bogus", "Ongoing"), List.of()), (short) 0, masked);
        side.call("by producer id", listTxn(List.of(), List.of(b[0])), (short) 0, masked);
        side.call("by duration (v1)", new ListTransactionsRequest.Builder(new ListTransactionsRequestData()
                .setDurationFilter(3_600_000L)), (short) 1, masked);
        side.call("by pattern (v2)", new ListTransactionsRequest.Builder(new ListTransactionsRequestData()
                .setTransactionalIdPattern(tid + "-[a]")), (short) 2, masked);
        r.call("abort a", endTxn(tid + "-a", a[0], a[1], false, 4), 4);
        r.awaitState("a aborted", tid + "-a", "CompleteAbort");
        side.call("CompleteAbort", listTxn(List.of("CompleteAbort"), List.of()), (short) 0, masked);
    }

    static void describeProducers(Side side) throws Exception {
        Run r = new Run(side);
        String tid = "txn-describe-producers";
        String t = tid + "-t";
        long[] p = initTxn(r, "init", tid);
        r.call("add", addPartitions(tid, p[0], p[1], List.of(tp(t, 0))), 3);
        r.call("produce at offset 0", produce(tid, t, 0, txnBatch(p[0], p[1], 0, "x", "y"), 11), 11);
        r.call("open transaction", describeProducers(t, 0, 1), 0);
        r.call("unknown partition", describeProducers(t, 5), 0);
        r.call("unknown topic", describeProducers(tid + "-nope", 0), 0);
        r.call("commit", endTxn(tid, p[0], p[1], true, 4), 4);
        r.awaitState("committed", tid, "CompleteCommit");
        r.call("after the commit", describeProducers(t, 0), 0);
    }
}
