//! Producer id blocks (metadata record 15): every id below `next_producer_id` has been handed
//! out, so a restarted controller never hands one out twice.
use kcoord_wire::records::ProducerIdsRecord;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProducerIdsImage {
    next_producer_id: i64,
}

impl ProducerIdsImage {
    /// The first id of the next block.
    pub fn next_producer_id(&self) -> i64 {
        self.next_producer_id
    }

    /// Kafka's `ProducerIdControlManager.replay`: blocks only move forward.
    pub(crate) fn replay(&mut self, r: &ProducerIdsRecord) -> Result<(), String> {
        if r.next_producer_id <= self.next_producer_id {
            return Err(format!(
                "next producer id {} is not after the current {}",
                r.next_producer_id, self.next_producer_id
            ));
        }
        self.next_producer_id = r.next_producer_id;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_only_move_forward() {
        let mut image = ProducerIdsImage::default();
        let record = |next| ProducerIdsRecord {
            broker_id: 1,
            broker_epoch: -1,
            next_producer_id: next,
            ..Default::default()
        };
        image.replay(&record(1000)).unwrap();
        assert_eq!(image.next_producer_id(), 1000);
        assert!(image.replay(&record(1000)).is_err());
        assert!(image.replay(&record(500)).is_err());
        assert_eq!(image.next_producer_id(), 1000);
    }
}
