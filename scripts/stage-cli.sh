#!/usr/bin/env bash
# Builds the `izwi` CLI in the profile of the app being bundled and puts it where
# src-tauri/tauri.conf.json takes it from for the .deb and .rpm (/usr/bin/izwi):
# target/cli/izwi. `npx tauri build` runs this as its beforeBundleCommand.
#
#   scripts/stage-cli.sh
#
# Environment (as Tauri sets it, or by hand):
#   TAURI_ENV_DEBUG   true for a debug bundle (`npx tauri build --debug`)
#   CARGO_TARGET_DIR  where cargo puts what it builds (default target/)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
profile=release
flags=(--release)
if [[ ${TAURI_ENV_DEBUG:-false} == true ]]; then
    profile=debug
    flags=()
fi
# The CLI's binary only (building every target would rebuild the app being bundled
# without Tauri's custom-protocol feature), with the whole workspace's features, as
# every other build here: `-p izwi-cli` alone would compile shared dependencies again.
cargo build --workspace --bin izwi "${flags[@]}"
mkdir -p target/cli
cp "${CARGO_TARGET_DIR:-target}/$profile/izwi" target/cli/izwi
echo "staged $(target/cli/izwi --version) as target/cli/izwi"
