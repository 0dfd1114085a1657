// `sqlx::migrate!` embeds the migration files but does not notice a new one; rebuild
// when the folder changes so a new migration is never left out of the binary.
fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
