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
