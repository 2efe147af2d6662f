"""kafka-python's classic consumer group against the daemon at argv[1] (run by
tests/kafka_python_group.rs, in the virtualenv it installs): two members share a topic's
partitions, consume everything once and commit; when one leaves (LeaveGroup), the other is
given every partition and reads on from the committed offsets. Exits non-zero on the first
check that fails; prints what it checked."""
import sys
import time

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition

BOOTSTRAP = sys.argv[1]
TOPIC = "py-classic"
GROUP = "py-classic-group"
PARTITIONS = 4
DEADLINE_S = 30


def member(client_id):
    consumer = KafkaConsumer(
        bootstrap_servers=BOOTSTRAP,
        group_id=GROUP,
        client_id=client_id,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        # Longer than the deadlines: a member that left must have sent LeaveGroup to be gone.
        session_timeout_ms=45000,
        heartbeat_interval_ms=300,
    )
    consumer.subscribe([TOPIC])
    return consumer


def poll_until(consumers, seen, what, done):
    """Polls each consumer (seen[i] counts what consumers[i] read) until done() holds."""
    deadline = time.monotonic() + DEADLINE_S
    while not done():
        if time.monotonic() > deadline:
            sys.exit("timed out: %s (seen %s)" % (what, [len(s) for s in seen]))
        for consumer, counts in zip(consumers, seen):
            for records in consumer.poll(timeout_ms=50).values():
                for r in records:
                    value = r.value.decode()
                    counts[value] = counts.get(value, 0) + 1


def produce(start, end):
    producer = KafkaProducer(bootstrap_servers=BOOTSTRAP)
    for i in range(start, end):
        producer.send(TOPIC, value=b"v%d" % i, partition=i % PARTITIONS)
    producer.flush()
    producer.close()


def values(start, end):
    return {"v%d" % i for i in range(start, end)}


def check(condition, message):
    if not condition:
        sys.exit("failed: " + message)
    print("ok: " + message)


def partitions(consumer):
    return {tp.partition for tp in consumer.assignment()}


def committed(consumer):
    return [consumer.committed(TopicPartition(TOPIC, p)) for p in range(PARTITIONS)]


def describe(admin):
    """DescribeGroups: (state, protocol type, protocol, {client id: assigned partitions})."""
    group = admin.describe_groups([GROUP])[GROUP]
    members = {}
    for m in group["members"]:
        assigned = m["member_assignment"]["assigned_partitions"]
        members[m["client_id"]] = sorted(p for t in assigned for p in t["partitions"])
    return group["group_state"], group["protocol_type"], group["protocol_data"], members


def main():
    admin = KafkaAdminClient(bootstrap_servers=BOOTSTRAP)
    admin.create_topics({TOPIC: {"num_partitions": PARTITIONS, "replication_factor": 1}})

    # The records come once the group is settled: a record read before a rebalance and not
    # committed is read again after it (at least once), which is not what this is about.
    a, b = member("py-a"), member("py-b")
    seen = [{}, {}]
    poll_until([a, b], seen, "two members of two partitions",
               lambda: len(partitions(a)) == 2 and len(partitions(b)) == 2
               and not partitions(a) & partitions(b))
    check(True, "a has %s, b has %s" % (sorted(partitions(a)), sorted(partitions(b))))
    produce(0, 100)
    poll_until([a, b], seen, "both members consume", lambda: set(seen[0]) | set(seen[1]) == values(0, 100))
    check(all(n == 1 for s in seen for n in s.values()), "every record consumed once")
    check(not set(seen[0]) & set(seen[1]), "no record consumed by both")
    a.commit()
    b.commit()
    check(committed(a) == [25] * PARTITIONS, "committed 25 on every partition: %s" % committed(a))
    expected = ("Stable", "consumer", "range", {"py-a": sorted(partitions(a)), "py-b": sorted(partitions(b))})
    check(describe(admin) == expected, "DescribeGroups: %s" % (describe(admin),))

    # a leaves (close sends LeaveGroup): b is given every partition, then reads only the new
    # records (none of the first hundred again).
    a.close()
    after = [{}]
    poll_until([b], after, "b takes over", lambda: len(partitions(b)) == PARTITIONS)
    produce(100, 140)
    poll_until([b], after, "b reads the new records", lambda: set(after[0]) == values(100, 140))
    check(all(n == 1 for n in after[0].values()), "b read the new records once")
    b.commit()
    check(committed(b) == [35] * PARTITIONS, "committed 35 on every partition: %s" % committed(b))
    expected = ("Stable", "consumer", "range", {"py-b": list(range(PARTITIONS))})
    check(describe(admin) == expected, "DescribeGroups: %s" % (describe(admin),))
    b.close()
    admin.close()


if __name__ == "__main__":
    main()
