//! Generates ui/src/bindings.ts from the commands and types, and fails when the file
//! in the repository was different: commit the regenerated file.

use std::path::Path;

#[test]
fn bindings_are_up_to_date() {
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ui/src/bindings.ts");
    let dir = tempfile::tempdir().unwrap();
    let fresh_path = dir.path().join("bindings.ts");
    izwi_desktop::export_bindings(&fresh_path).unwrap();
    let fresh = std::fs::read_to_string(&fresh_path).unwrap();
    let before = std::fs::read_to_string(&committed).unwrap_or_default();
    if fresh != before {
        std::fs::write(&committed, &fresh).unwrap();
        panic!(
            "{} was stale and has been regenerated: review and commit it",
            committed.display()
        );
    }
}
