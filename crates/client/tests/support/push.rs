//! A fake coordinator side of topology description pushes (keys 95 and 93): it records every
//! push and answers from a script (by default NONE, no throttle), can stay silent or hang up.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::{
    StreamsGroupTopologyDescriptionUpdateRequest, StreamsGroupTopologyDescriptionUpdateResponse,
    UpdateStreamsGroupTopologyDescriptionRequest, UpdateStreamsGroupTopologyDescriptionResponse,
};

use super::streams::{CoordinatorSequence, FakeStreamsCoordinator};
use super::{api_versions, response, Received, Reply};

/// How the fake answers one push.
#[derive(Debug, Clone)]
pub enum PushReply {
    Answer {
        error_code: i16,
        throttle_time_ms: i32,
    },
    /// Never answer; the connection stays open.
    Silence,
    /// Close the connection instead of answering.
    Close,
}

impl PushReply {
    pub fn error(error_code: i16) -> PushReply {
        PushReply::Answer {
            error_code,
            throttle_time_ms: 0,
        }
    }
}

/// One push as received.
#[derive(Debug, Clone)]
pub enum Pushed {
    Spec(UpdateStreamsGroupTopologyDescriptionRequest),
    Kafka(StreamsGroupTopologyDescriptionUpdateRequest),
}

#[derive(Default)]
struct State {
    script: VecDeque<PushReply>,
    pushed: Vec<Pushed>,
}

/// See the module documentation. Clones share the state.
#[derive(Clone, Default)]
pub struct FakePushCoordinator(Arc<Mutex<State>>);

impl FakePushCoordinator {
    /// Answers the next push with `reply`.
    pub fn script(&self, reply: PushReply) {
        self.0.lock().unwrap().script.push_back(reply);
    }

    pub fn pushed(&self) -> Vec<Pushed> {
        self.0.lock().unwrap().pushed.clone()
    }

    pub fn count(&self) -> usize {
        self.0.lock().unwrap().pushed.len()
    }

    pub fn answer(&self, request: &Received) -> Reply {
        let reply = {
            let mut state = self.0.lock().unwrap();
            let pushed = if request.api_key() == ApiKey::UpdateStreamsGroupTopologyDescription.key()
            {
                Pushed::Spec(request.decode())
            } else {
                Pushed::Kafka(request.decode())
            };
            state.pushed.push(pushed);
            state.script.pop_front().unwrap_or(PushReply::Answer {
                error_code: 0,
                throttle_time_ms: 0,
            })
        };
        match reply {
            PushReply::Silence => Reply::Nothing,
            PushReply::Close => Reply::Close,
            PushReply::Answer {
                error_code,
                throttle_time_ms,
            } => {
                let error_message = (error_code != 0).then(|| "scripted".to_string());
                if request.api_key() == ApiKey::UpdateStreamsGroupTopologyDescription.key() {
                    response(
                        request,
                        &UpdateStreamsGroupTopologyDescriptionResponse {
                            throttle_time_ms,
                            error_code,
                            error_message,
                            ..Default::default()
                        },
                    )
                } else {
                    response(
                        request,
                        &StreamsGroupTopologyDescriptionUpdateResponse {
                            throttle_time_ms,
                            error_code,
                            error_message,
                            ..Default::default()
                        },
                    )
                }
            }
        }
    }
}

/// A server handler: ApiVersions with `apis`, FindCoordinator from `coordinators`, streams
/// heartbeats from `streams`, pushes from `pushes`; anything else closes the connection.
pub fn push_handler(
    apis: Vec<(ApiKey, i16, i16)>,
    coordinators: CoordinatorSequence,
    streams: FakeStreamsCoordinator,
    pushes: FakePushCoordinator,
) -> impl Fn(&Received) -> Reply + Send + Sync + 'static {
    move |request| match ApiKey::from_i16(request.api_key()) {
        Some(ApiKey::ApiVersions) => response(request, &api_versions(&apis)),
        Some(ApiKey::FindCoordinator) => coordinators.answer(request),
        Some(ApiKey::StreamsGroupHeartbeat) => response(
            request,
            &streams.heartbeat(&request.decode(), request.version()),
        ),
        Some(
            ApiKey::UpdateStreamsGroupTopologyDescription
            | ApiKey::StreamsGroupTopologyDescriptionUpdate,
        ) => pushes.answer(request),
        _ => Reply::Close,
    }
}
