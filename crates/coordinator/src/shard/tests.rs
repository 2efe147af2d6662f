use super::*;
use crate::effects::GroupEffect;
use crate::effects::MemberEffect;

#[test]
fn the_next_deadline_includes_initial_delays_without_visiting_every_group() {
    let mut shard = CoordinatorShard::new(StreamsGroupConfig::default(), 1);
    let delay = |group: &str, deadline| {
        Effect::Group(GroupEffect::InitialDelay {
            group_id: group.into(),
            deadline,
        })
    };
    assert_eq!(shard.next_deadline(), None);
    shard.apply_effect(delay("g1", 50));
    // Already armed: the first deadline stays.
    shard.apply_effect(delay("g1", 60));
    assert_eq!(
        shard.soft("g1").and_then(|s| s.initial_delay_deadline),
        Some(50)
    );
    shard.apply_effect(delay("g2", 40));
    shard.apply_effect(Effect::Member(MemberEffect::SessionTimer {
        group_id: "g1".into(),
        member_id: "m".into(),
        deadline: 45,
    }));
    assert_eq!(shard.next_deadline(), Some(40));
    assert_eq!(shard.ended_initial_delays(40), vec!["g2".to_string()]);
    shard.apply_effect(Effect::Group(GroupEffect::ClearInitialDelay {
        group_id: "g2".into(),
    }));
    assert_eq!(
        shard.soft("g2").and_then(|s| s.initial_delay_deadline),
        None
    );
    assert_eq!(shard.next_deadline(), Some(45));
    shard.apply_effect(Effect::Group(GroupEffect::Gone {
        group_id: "g1".into(),
    }));
    assert!(shard.delays.is_empty());
    shard.apply_effect(Effect::Member(MemberEffect::Gone {
        group_id: "g1".into(),
        member_id: "m".into(),
    }));
    assert_eq!(shard.next_deadline(), None);
    assert!(
        shard.soft("g1").is_none(),
        "nothing is kept of a gone group"
    );
}

#[test]
fn a_groups_entry_holding_only_timers_goes_with_its_last_member() {
    let mut shard = CoordinatorShard::new(StreamsGroupConfig::default(), 1);
    let session = |group: &str, member: &str| {
        Effect::Member(MemberEffect::SessionTimer {
            group_id: group.into(),
            member_id: member.into(),
            deadline: 100,
        })
    };
    let gone = |group: &str, member: &str| {
        Effect::Member(MemberEffect::Gone {
            group_id: group.into(),
            member_id: member.into(),
        })
    };
    // A consumer group's entry holds only its members' timers.
    shard.apply_effect(session("consumers", "a"));
    shard.apply_effect(session("consumers", "b"));
    shard.apply_effect(gone("consumers", "a"));
    assert!(shard.soft("consumers").is_some(), "b's session is armed");
    shard.apply_effect(gone("consumers", "b"));
    assert!(shard.soft("consumers").is_none());
    // A streams group's soft state outlives its members' timers.
    shard.apply_effect(session("streams", "a"));
    shard.apply_effect(Effect::Group(GroupEffect::EndpointInformationEpoch {
        group_id: "streams".into(),
        epoch: 3,
    }));
    shard.apply_effect(gone("streams", "a"));
    assert_eq!(
        shard.soft("streams").map(|s| s.endpoint_information_epoch),
        Some(3)
    );
    assert_eq!(shard.next_deadline(), None);
}

#[test]
fn minted_ids_follow_the_seed_and_the_count_and_are_never_nil() {
    let mut a = CoordinatorShard::new(StreamsGroupConfig::default(), 7);
    let b = CoordinatorShard::new(StreamsGroupConfig::default(), 7);
    let c = CoordinatorShard::new(StreamsGroupConfig::default(), 8);
    assert_eq!(a.mint_id(0), b.mint_id(0));
    assert_ne!(a.mint_id(0), c.mint_id(0));
    assert_ne!(a.mint_id(0), a.mint_id(1));
    let second = a.mint_id(1);
    a.apply_effect(Effect::IdsMinted(1));
    assert_eq!(a.mint_id(0), second, "a minted id is not minted again");
    assert!(!a.mint_id(0).is_nil());
}
