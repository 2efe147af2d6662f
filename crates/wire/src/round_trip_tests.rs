//! Property test: for every generated type and every version it supports, random values
//! survive encode -> decode -> encode unchanged, and `compute_size` matches the bytes written.
use proptest::prelude::*;
use rand::SeedableRng;

fn check_all(seed: u64) -> Result<(), String> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let cases = crate::messages::round_trip_cases().into_iter().chain(crate::records::round_trip_cases());
    for case in cases {
        for version in case.versions.0..=case.versions.1 {
            (case.check)(&mut rng, version).map_err(|e| format!("{}: {e}", case.name))?;
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn every_schema_and_version_round_trips(seed in any::<u64>()) {
        if let Err(e) = check_all(seed) {
            prop_assert!(false, "{}", e);
        }
    }
}

#[test]
fn every_schema_is_covered() {
    let names: Vec<&str> = crate::messages::round_trip_cases()
        .iter()
        .chain(crate::records::round_trip_cases().iter())
        .map(|c| c.name)
        .collect::<Vec<_>>();
    let schemas = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../../schemas")).unwrap();
    for entry in schemas {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
            assert!(names.contains(&stem.as_str()), "{stem} has no round-trip case");
        }
    }
}
