//! Task identities shared by the topology configuration and the assignor.

/// A task: (sub-topology id, partition).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskId {
    pub subtopology: String,
    pub partition: i32,
}

impl TaskId {
    pub fn new(subtopology: impl Into<String>, partition: i32) -> Self {
        TaskId {
            subtopology: subtopology.into(),
            partition,
        }
    }
}
