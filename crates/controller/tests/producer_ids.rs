//! Producer id blocks: recorded in the log before they are handed out, so replaying the log
//! never hands out an id twice.

mod support;
use kcoord_controller::{Controller, ControllerConfig, ProducerIdBlock, PRODUCER_ID_BLOCK_SIZE};
use support::Applied;

#[test]
fn blocks_follow_each_other_and_survive_replay() {
    let mut controller = Controller::new(ControllerConfig::new("MkU3OEVBNTcwNTJENDM2Qg")).unwrap();
    let a = controller.allocate(1, -1).unwrap();
    let b = controller.allocate(1, -1).unwrap();
    assert_eq!(
        a,
        ProducerIdBlock {
            first: 0,
            size: PRODUCER_ID_BLOCK_SIZE
        }
    );
    assert_eq!(b.first, PRODUCER_ID_BLOCK_SIZE);

    let log = controller.store().log().clone();
    let mut replayed =
        Controller::from_log(ControllerConfig::new("MkU3OEVBNTcwNTJENDM2Qg"), &log, 0).unwrap();
    let c = replayed.allocate(1, -1).unwrap();
    assert_eq!(
        c.first,
        2 * PRODUCER_ID_BLOCK_SIZE,
        "a restarted controller goes on after the last block"
    );
}
