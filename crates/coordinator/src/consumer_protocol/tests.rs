use super::*;

fn put_str(b: &mut Vec<u8>, s: &str) {
    b.extend((s.len() as i16).to_be_bytes());
    b.extend(s.as_bytes());
}

/// A subscription as Kafka's `ConsumerProtocol.serializeSubscription` writes it at version 3.
fn subscription_v3(topics: &[&str], owned: &[(&str, &[i32])], rack: Option<&str>) -> Vec<u8> {
    let mut b = vec![0, 3];
    b.extend((topics.len() as i32).to_be_bytes());
    for t in topics {
        put_str(&mut b, t);
    }
    b.extend((-1i32).to_be_bytes()); // no user data
    b.extend((owned.len() as i32).to_be_bytes());
    for (t, parts) in owned {
        put_str(&mut b, t);
        b.extend((parts.len() as i32).to_be_bytes());
        for p in *parts {
            b.extend(p.to_be_bytes());
        }
    }
    b.extend(7i32.to_be_bytes()); // generation
    match rack {
        Some(r) => put_str(&mut b, r),
        None => b.extend((-1i16).to_be_bytes()),
    }
    b
}

#[test]
fn subscriptions_are_read_as_kafka_reads_them() {
    let s =
        read_subscription(&subscription_v3(&["b", "a"], &[("a", &[1, 0])], Some("r1"))).unwrap();
    assert_eq!(s.version, 3);
    assert_eq!(s.topics, ["b", "a"]);
    assert_eq!(s.owned_partitions, vec![("a".to_string(), vec![1, 0])]);
    assert_eq!(s.generation_id, 7);
    assert_eq!(s.rack_id.as_deref(), Some("r1"));
    assert!(read_subscription(&subscription_v3(&[], &[], None)).is_ok());
    // v0: topics and user data only; trailing bytes are ignored, as Kafka ignores them.
    let v0 = read_subscription(&[0, 0, 0, 0, 0, 0, 255, 255, 255, 255, 9]).unwrap();
    assert_eq!((v0.generation_id, v0.user_data), (-1, None));
    // A version above 3 is read as 3.
    let mut v9 = subscription_v3(&["a"], &[], None);
    v9[1] = 9;
    assert_eq!(read_subscription(&v9).unwrap().version, 3);
    assert_eq!(read_subscription(b""), Err(Malformed));
    assert_eq!(read_subscription(b"subscription"), Err(Malformed));
    assert_eq!(
        read_subscription(&[255, 255, 0, 0, 0, 0]),
        Err(Malformed),
        "a negative version"
    );
    let cut = subscription_v3(&["a"], &[], Some("rack"));
    assert_eq!(read_subscription(&cut[..cut.len() - 1]), Err(Malformed));
    let mut huge = 0i16.to_be_bytes().to_vec();
    huge.extend(i32::MAX.to_be_bytes());
    assert_eq!(read_subscription(&huge), Err(Malformed));
    // v1 needs its owned partitions.
    let mut v1 = vec![0, 1, 0, 0, 0, 1];
    put_str(&mut v1, "t");
    v1.extend(2i32.to_be_bytes());
    v1.extend(b"ud");
    assert_eq!(read_subscription(&v1), Err(Malformed));
    v1[1] = 0;
    assert_eq!(
        read_subscription(&v1).unwrap().user_data.as_deref(),
        Some(&b"ud"[..])
    );
}

#[test]
fn assignments_round_trip_and_user_data_is_told_apart() {
    let written = write_assignment(
        &BTreeMap::from([("t".to_string(), BTreeSet::from([7, 1]))]),
        1,
    );
    assert_eq!(read_version(&written), Ok(1));
    let read = read_assignment(&written).unwrap();
    assert_eq!(read.partitions, vec![("t".to_string(), vec![1, 7])]);
    assert!(!read.has_user_data());
    let mut with_data = written[..written.len() - 4].to_vec();
    with_data.extend(2i32.to_be_bytes());
    with_data.extend([1, 2]);
    assert!(read_assignment(&with_data).unwrap().has_user_data());
    assert_eq!(read_assignment(&[0, 0, 0, 0, 0, 9]), Err(Malformed));
    assert_eq!(read_version(&write_assignment(&BTreeMap::new(), 9)), Ok(3));
}
