use kcoord_wire::messages::offset_fetch_request::OffsetFetchRequestGroup;

use super::*;

fn body<M: Encodable>(m: &M, version: i16) -> Bytes {
    encoded(m, version).unwrap()
}

#[test]
fn a_part_names_only_its_groups_and_keeps_every_other_field() {
    let request = OffsetFetchRequest {
        require_stable: true,
        groups: ["a", "b", "c"]
            .map(|g| OffsetFetchRequestGroup {
                group_id: g.into(),
                member_epoch: -1,
                ..Default::default()
            })
            .to_vec(),
        ..Default::default()
    };
    let whole = body(&request, 9);
    assert_eq!(
        batch_groups(ApiKey::OffsetFetch, 9, &whole).unwrap(),
        ["a", "b", "c"]
    );
    let parts = parts(ApiKey::OffsetFetch, 9, &whole, &[vec![2, 0], vec![1]]).unwrap();
    let part: OffsetFetchRequest = decode_request(&parts[0], 9).unwrap();
    let other: OffsetFetchRequest = decode_request(&parts[1], 9).unwrap();
    assert_eq!(other.groups, [request.groups[1].clone()]);
    assert!(part.require_stable);
    assert_eq!(
        part.groups,
        [request.groups[2].clone(), request.groups[0].clone()]
    );
    // Before v8 an OffsetFetch names one group: not a batch.
    let one = OffsetFetchRequest {
        group_id: "a".into(),
        ..Default::default()
    };
    assert!(batch_groups(ApiKey::OffsetFetch, 7, &body(&one, 7)).is_none());
    assert!(batch_groups(ApiKey::ListGroups, 4, &Bytes::new()).is_none());
    assert!(batch_groups(ApiKey::DescribeGroups, 5, &Bytes::from_static(&[9])).is_none());
}

fn deleted(results: &[(&str, i16)], throttle_time_ms: i32) -> Bytes {
    let answer = DeleteGroupsResponse {
        throttle_time_ms,
        results: results
            .iter()
            .map(|(g, code)| DeletableGroupResult {
                group_id: (*g).into(),
                error_code: *code,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    body(&answer, 2)
}

#[test]
fn answers_come_back_in_the_requests_order_with_the_longest_throttle() {
    let named = ["x", "y", "x", "z"].map(str::to_owned);
    let parts = vec![
        deleted(&[("y", 68), ("z", 0)], 5),
        deleted(&[("x", 0), ("x", 69)], 20),
    ];
    let merged = merge(ApiKey::DeleteGroups, 2, &named, parts).unwrap();
    let merged: DeleteGroupsResponse = decode_request(&merged, 2).unwrap();
    assert_eq!(merged.throttle_time_ms, 20);
    let results: Vec<(&str, i16)> = merged
        .results
        .iter()
        .map(|r| (r.group_id.as_str(), r.error_code))
        .collect();
    assert_eq!(results, [("x", 0), ("y", 68), ("x", 69), ("z", 0)]);
}

#[test]
fn an_entry_no_named_group_claims_is_kept_and_a_bad_answer_is_refused() {
    let named = ["x".to_owned()];
    let parts = vec![deleted(&[("stray", 0)], 0), deleted(&[("x", 0)], 0)];
    let merged = merge(ApiKey::DeleteGroups, 2, &named, parts).unwrap();
    let merged: DeleteGroupsResponse = decode_request(&merged, 2).unwrap();
    let ids: Vec<&str> = merged.results.iter().map(|r| r.group_id.as_str()).collect();
    assert_eq!(ids, ["x", "stray"]);
    assert!(merge(
        ApiKey::DeleteGroups,
        2,
        &named,
        vec![Bytes::from_static(&[1])]
    )
    .is_err());
    assert!(merge(ApiKey::Produce, 9, &named, Vec::new()).is_err());
}
