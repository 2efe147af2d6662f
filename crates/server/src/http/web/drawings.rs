//! The last drawing of each group, so that laying a topology out (hundreds of milliseconds for
//! 200 nodes) happens once per description rather than once per page load, and off the HTTP
//! listener's one thread (`spawn_blocking`), which `/metrics` and `/health/*` share.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use bytes::Bytes;

use kcoord_topology::layout::LayoutError;
use kcoord_topology::StreamsGroupTopologyDescription;

/// Groups whose drawing is kept; past this, one is forgotten for each new one. A drawing of
/// 200 nodes is about 200 KB.
pub const MAX_DRAWINGS: usize = 64;

#[derive(Debug, thiserror::Error)]
pub enum DrawingError {
    #[error("cannot lay the topology out: {0}")]
    Layout(#[from] LayoutError),
    #[error("the drawing task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
}

/// Group id → the description last drawn and its SVG (shared by every answer that sends it).
#[derive(Debug, Default)]
pub struct Drawings {
    kept: Mutex<HashMap<String, (StreamsGroupTopologyDescription, Bytes)>>,
}

impl Drawings {
    /// The SVG of `description`, group `group_id`'s: the kept one when the description is the
    /// one drawn last for the group, else drawn now and kept.
    pub async fn draw(
        &self,
        group_id: &str,
        description: StreamsGroupTopologyDescription,
    ) -> Result<Bytes, DrawingError> {
        if let Some(svg) = self.kept(group_id, &description) {
            return Ok(svg);
        }
        let id = group_id.to_owned();
        let (description, svg) = tokio::task::spawn_blocking(move || {
            let svg = kcoord_topology::svg::render_svg(&id, &description);
            (description, svg)
        })
        .await?;
        let svg = Bytes::from(svg?);
        self.keep(group_id, description, svg.clone());
        Ok(svg)
    }

    fn kept(&self, group_id: &str, description: &StreamsGroupTopologyDescription) -> Option<Bytes> {
        let kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        kept.get(group_id)
            .filter(|(drawn, _)| drawn == description)
            .map(|(_, svg)| svg.clone())
    }

    fn keep(&self, group_id: &str, description: StreamsGroupTopologyDescription, svg: Bytes) {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.len() >= MAX_DRAWINGS && !kept.contains_key(group_id) {
            if let Some(any) = kept.keys().next().cloned() {
                kept.remove(&any);
            }
        }
        kept.insert(group_id.to_owned(), (description, svg));
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.kept
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcoord_topology::synthetic::{chain, described};

    #[tokio::test]
    async fn a_description_is_drawn_once_and_a_changed_one_again() {
        let drawings = Drawings::default();
        let first = drawings.draw("g", described(&chain(4))).await.unwrap();
        let again = drawings.draw("g", described(&chain(4))).await.unwrap();
        assert_eq!(first.as_ptr(), again.as_ptr(), "the kept drawing is reused");
        let changed = drawings.draw("g", described(&chain(5))).await.unwrap();
        assert_ne!(first.as_ptr(), changed.as_ptr());
        assert_eq!(
            changed,
            kcoord_topology::svg::render_svg("g", &described(&chain(5))).unwrap()
        );
        // The group id is in the drawing (its title): another group's is drawn anew.
        let other = drawings.draw("h", described(&chain(5))).await.unwrap();
        assert!(String::from_utf8_lossy(&other).contains("streams group h"));
    }

    #[tokio::test]
    async fn at_most_max_drawings_are_kept() {
        let drawings = Drawings::default();
        for g in 0..MAX_DRAWINGS + 3 {
            drawings
                .draw(&format!("g{g}"), described(&chain(3)))
                .await
                .unwrap();
        }
        assert_eq!(drawings.len(), MAX_DRAWINGS);
    }
}
