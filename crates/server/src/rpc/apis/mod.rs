//! One file per RPC, named for its API. Each declares its [`crate::rpc::Rpc`]
//! (`RPC`: key, versions, listeners, authorization), its handler
//! `handle(&RequestContext, Request, version) -> Response` (`async` when it waits for the
//! controller or a coordinator shard), testable without sockets, and `serve`, which decodes,
//! calls and encodes ([`crate::rpc::serve!`]). `build.rs` lists the files: [`ALL`] and the
//! dispatch `match` in [`serve`] come from them, so a new RPC is one new file here.

automod::dir!(pub "src/rpc/apis");

include!(concat!(env!("OUT_DIR"), "/apis.rs"));
