//! Listing topics (Kafka's `Admin.listTopics`, KIP-142): with ListTopics (key 96) when the
//! server offers it, else with an all-topics Metadata request, as KIP-142 says clients fall
//! back against servers without it. Both go to the bootstrap server.

use kcoord_wire::messages::{ListTopicsRequest, MetadataRequest};
use kcoord_wire::Request;

use crate::client::Client;
use crate::error::ClientError;

/// A topic as `Admin.listTopics` reports it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct TopicListing {
    pub name: String,
    pub internal: bool,
}

/// Which request answered a [`Client::list_topics_via`] call, and at which version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListTopicsSource {
    ListTopics { version: i16 },
    Metadata { version: i16 },
}

impl Client {
    /// Every topic the caller may describe, by name; internal ones only when
    /// `include_internal`.
    pub async fn list_topics(
        &self,
        include_internal: bool,
    ) -> Result<Vec<TopicListing>, ClientError> {
        self.list_topics_via(include_internal)
            .await
            .map(|(topics, _)| topics)
    }

    /// [`Client::list_topics`], also saying which request was used.
    pub async fn list_topics_via(
        &self,
        include_internal: bool,
    ) -> Result<(Vec<TopicListing>, ListTopicsSource), ClientError> {
        let conn = self.bootstrap_connection().await?;
        let (mut topics, source) = match conn.version_for::<ListTopicsRequest>() {
            Some(version) => {
                let response = conn
                    .send(
                        ListTopicsRequest {
                            list_internal: include_internal,
                            ..Default::default()
                        },
                        version,
                    )
                    .await?;
                ClientError::check(ListTopicsRequest::KEY, response.error_code, None)?;
                let topics: Vec<TopicListing> = response
                    .topics
                    .into_iter()
                    .map(|t| TopicListing {
                        name: t.name,
                        internal: t.internal,
                    })
                    .collect();
                (topics, ListTopicsSource::ListTopics { version })
            }
            None => {
                let version = conn.negotiated_version::<MetadataRequest>().await?;
                let response = self.metadata(None).await?;
                // As Kafka's admin client: only topics without an error (`buildCluster`), and
                // the internal ones only when asked for.
                let topics = response
                    .topics
                    .into_iter()
                    .filter(|t| t.error_code == 0)
                    .filter_map(|t| {
                        t.name.map(|name| TopicListing {
                            name,
                            internal: t.is_internal,
                        })
                    })
                    .collect();
                (topics, ListTopicsSource::Metadata { version })
            }
        };
        // A server that ignored list_internal (or Metadata, which cannot be asked) still gets
        // the filter.
        topics.retain(|t| include_internal || !t.internal);
        topics.sort();
        topics.dedup();
        Ok((topics, source))
    }
}
