//! Whatever brokers do (register, re-register, heartbeat, ask to be fenced or to shut down,
//! fall silent, get unregistered), replaying the controller's log gives its live state, and a
//! controller restarted from that log has the same registrations.
mod support;

use kcoord_controller::{Controller, ControllerConfig, MetadataVersion};
use kcoord_metadata::Store;
use kcoord_wire::messages::BrokerHeartbeatRequest;
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use support::*;

fn run(seed: u64, steps: usize, level: i16) -> Result<(), TestCaseError> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mv = MetadataVersion::from_feature_level(level).expect("a known level");
    let config = ControllerConfig::new(CLUSTER)
        .with_metadata_version(mv)
        .with_session_timeout_ms(1_000);
    let mut controller = Controller::new(config.clone()).expect("bootstrap");
    let mut now = 0i64;
    // The incarnation each broker id last tried.
    let mut incarnations = [0u128; 4];
    for _ in 0..steps {
        let broker = rng.random_range(0..4i32);
        match rng.random_range(0..10) {
            0..=2 => {
                if rng.random_ratio(1, 3) {
                    incarnations[broker as usize] += 1;
                }
                let mut request = registration(broker, incarnations[broker as usize]);
                request.log_dirs = (0..rng.random_range(0..3))
                    .map(|n| dir(broker, n))
                    .collect();
                request.static_configs.truncate(rng.random_range(0..3));
                let version = rng.random_range(0..=6);
                if version < 6 {
                    request.static_configs.clear();
                }
                let _ = controller.try_register_broker(&request, version, now);
            }
            3..=6 => {
                let epoch = controller.broker(broker).map_or(-1, |b| b.epoch);
                let request = BrokerHeartbeatRequest {
                    want_fence: rng.random_ratio(1, 6),
                    want_shut_down: rng.random_ratio(1, 10),
                    offline_log_dirs: if rng.random_ratio(1, 5) {
                        vec![dir(broker, 1)]
                    } else {
                        vec![]
                    },
                    cordoned_log_dirs: if rng.random_ratio(1, 5) {
                        Some(vec![dir(broker, 0)])
                    } else {
                        None
                    },
                    ..heartbeat(broker, epoch, epoch + rng.random_range(-1..3))
                };
                let _ = controller.try_broker_heartbeat(&request, now);
            }
            7 if rng.random_ratio(1, 4) => {
                let _ = controller.unregister(broker);
            }
            _ => {
                now += rng.random_range(0..1_500);
                controller
                    .fence_expired(now)
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
            }
        }
    }
    let replayed = Store::replay_log(controller.store().log())
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(replayed.state(), controller.state());
    let restarted = Controller::from_log(config, controller.store().log(), now)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(restarted.brokers(), controller.brokers());
    prop_assert_eq!(restarted.metadata_version(), mv);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn replaying_the_controllers_log_gives_its_live_state(seed in any::<u64>(), steps in 1usize..150, level in prop::sample::select(vec![7i16, 8, 16, 17, 29, 30, 33, 34])) {
        run(seed, steps, level)?;
    }
}
