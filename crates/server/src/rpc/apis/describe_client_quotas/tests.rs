use kcoord_metadata::{LogState, Record};
use kcoord_wire::records::client_quota_record::EntityData as RecordEntity;
use kcoord_wire::records::ClientQuotaRecord;

use super::*;

type Parts<'a> = &'a [(&'a str, Option<&'a str>)];

fn image(entities: &[Parts]) -> ClientQuotasImage {
    let mut state = LogState::default();
    for (offset, parts) in entities.iter().enumerate() {
        let record = Record::ClientQuota(ClientQuotaRecord {
            entity: parts
                .iter()
                .map(|(t, n)| RecordEntity {
                    entity_type: (*t).into(),
                    entity_name: n.map(str::to_owned),
                    ..Default::default()
                })
                .collect(),
            key: "producer_byte_rate".into(),
            value: 100.0 + offset as f64,
            ..Default::default()
        });
        state.replay(&record, offset as u64).unwrap();
    }
    state.client_quotas
}

fn component(entity_type: &str, match_type: i8, name: Option<&str>) -> ComponentData {
    ComponentData {
        entity_type: entity_type.into(),
        match_type,
        r#match: name.map(str::to_owned),
        ..Default::default()
    }
}

/// The matched entities as `type=name` lists.
fn matched(image: &ClientQuotasImage, components: Vec<ComponentData>, strict: bool) -> Vec<String> {
    let req = DescribeClientQuotasRequest {
        components,
        strict,
        ..Default::default()
    };
    describe(image, &req)
        .unwrap()
        .iter()
        .map(|e| {
            e.entity
                .iter()
                .map(|p| {
                    format!(
                        "{}={}",
                        p.entity_type,
                        p.entity_name.as_deref().unwrap_or("<default>")
                    )
                })
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect()
}

fn quotas() -> ClientQuotasImage {
    image(&[
        &[(USER, Some("alice"))],
        &[(USER, None)],
        &[(USER, Some("alice")), (CLIENT_ID, Some("app"))],
        &[(CLIENT_ID, Some("app"))],
        &[(IP, Some("10.0.0.1"))],
    ])
}

#[test]
fn exact_default_and_specified_filters_match_as_kafkas_image() {
    let image = quotas();
    assert_eq!(
        matched(
            &image,
            vec![component(USER, MATCH_EXACT, Some("alice"))],
            false
        ),
        vec!["client-id=app,user=alice", "user=alice"]
    );
    assert_eq!(
        matched(
            &image,
            vec![component(USER, MATCH_EXACT, Some("alice"))],
            true
        ),
        vec!["user=alice"]
    );
    assert_eq!(
        matched(&image, vec![component(USER, MATCH_DEFAULT, None)], false),
        vec!["user=<default>"]
    );
    assert_eq!(
        matched(&image, vec![component(USER, MATCH_SPECIFIED, None)], true),
        vec!["user=<default>", "user=alice"]
    );
    assert_eq!(
        matched(
            &image,
            vec![
                component(USER, MATCH_SPECIFIED, None),
                component(CLIENT_ID, MATCH_EXACT, Some("app"))
            ],
            true
        ),
        vec!["client-id=app,user=alice"]
    );
    assert_eq!(matched(&image, vec![], false).len(), 5);
    assert!(matched(&image, vec![], true).is_empty());
}

#[test]
fn bad_filters_are_refused_with_kafkas_codes_and_messages() {
    let image = quotas();
    let cases = [
        (vec![component("", MATCH_EXACT, Some("x"))], ErrorCode::INVALID_REQUEST, "Invalid empty entity type."),
        (
            vec![component(USER, MATCH_DEFAULT, None), component(USER, MATCH_SPECIFIED, None)],
            ErrorCode::INVALID_REQUEST,
            "Entity type user cannot appear more than once in the filter.",
        ),
        (vec![component("group", MATCH_EXACT, Some("g"))], ErrorCode::UNSUPPORTED_VERSION, "Unsupported entity type group"),
        (
            vec![component(USER, MATCH_EXACT, None)],
            ErrorCode::INVALID_REQUEST,
            "Request specified MATCH_TYPE_EXACT, but set match string to null.",
        ),
        (
            vec![component(USER, MATCH_SPECIFIED, Some("x"))],
            ErrorCode::INVALID_REQUEST,
            "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.",
        ),
        (vec![component(USER, 7, None)], ErrorCode::INVALID_REQUEST, "Unknown match type 7"),
        (
            vec![component(IP, MATCH_SPECIFIED, None), component(USER, MATCH_DEFAULT, None)],
            ErrorCode::INVALID_REQUEST,
            "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.",
        ),
    ];
    for (components, code, message) in cases {
        let req = DescribeClientQuotasRequest {
            components,
            ..Default::default()
        };
        assert_eq!(
            describe(&image, &req).err(),
            Some((code, message.to_owned()))
        );
    }
}
