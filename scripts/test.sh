#!/usr/bin/env bash
# Every test: the Rust workspace (with the real models and speech), the UI (typecheck,
# unit, browser tests on the recorded fixtures), then the real app on a virtual screen
# (opened with a file; then driven through WebDriver).
#
#   scripts/test.sh
#
# Needs what README.md lists (Rust, python3, npm), the Tauri system packages, and for
# the last step xvfb-run, ImageMagick and tesseract (.ci/run installs them on Debian).
#
# Environment:
#   CARGO_FLAGS          extra flags for cargo, e.g. --locked (CI)
#   IZWI_SKIP_APP_SMOKE  1 skips building the app and scripts/app-smoke.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
read -r -a cargo_flags <<<"${CARGO_FLAGS:-}"

echo "== assets"
scripts/fetch-assets.sh

echo "== cargo test --workspace"
cargo test --workspace "${cargo_flags[@]}"

echo "== UI: typecheck, unit and browser tests"
[[ -d node_modules ]] || npm install
[[ -d ui/node_modules ]] || npm run install:ui
npm run test:ui

if [[ ${IZWI_SKIP_APP_SMOKE:-} == 1 ]]; then
    echo "== app smoke test skipped (IZWI_SKIP_APP_SMOKE=1)"
    exit 0
fi
echo "== the app with the UI embedded, and its .deb"
npx tauri build --debug --bundles deb -- "${cargo_flags[@]}"
deb=$(ls -t "${CARGO_TARGET_DIR:-target}"/debug/bundle/deb/*.deb | head -n 1)
echo "== the .deb: the app, the izwi CLI, a launcher that opens many files ($deb)"
dpkg-deb -c "$deb" | grep -E ' (\./)?usr/bin/izwi$' >/dev/null || { echo "$deb lacks /usr/bin/izwi" >&2; exit 1; }
dpkg-deb --fsys-tarfile "$deb" | tar -xO --wildcards '*usr/share/applications/*.desktop' |
    grep '^Exec=.* %F$' >/dev/null || { echo "$deb: the launcher's Exec line lacks %F" >&2; exit 1; }
echo "== app smoke test"
scripts/app-smoke.sh
echo "== app tour: the history of each job kind and the Models screen, through WebDriver"
scripts/app-tour.sh
