#![no_main]
//! See `kcoord_fuzz::frame_decode` and FUZZING.md.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kcoord_fuzz::frame_decode(data));
