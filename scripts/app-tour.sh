#!/usr/bin/env bash
# The real desktop app driven through WebDriver on a virtual screen: a fresh data folder
# where the CLI imported tiny.en, the joe voice and SmolLM2, spoke a line, made a batch
# of three, transcribed jfk.wav and asked SmolLM2 a question; then scripts/app-tour.mjs
# opens each job in the History, the Models screen and that chat in the Chat screen
# (where it asks a second question of the real model), checks what they show and takes
# screenshots.
#
#   scripts/app-tour.sh               screenshots into target/app-tour/
#   scripts/app-tour.sh --update-docs also copies them into docs/img/
#
# Needs: the app built with the UI embedded (`npx tauri build --debug --bundles deb`),
# the izwi CLI, the assets (scripts/fetch-assets.sh), espeak-ng, xvfb-run, Debian's
# webkit2gtk-driver, tauri-driver (`cargo install tauri-driver --version '^2' --locked`,
# installed here when missing) and the npm packages (`npm install`).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
TARGET=${CARGO_TARGET_DIR:-target}
APP=$(realpath -m "${IZWI_APP:-$TARGET/debug/izwi-desktop}")
IZWI=$(realpath -m "${IZWI_BIN:-$TARGET/debug/izwi}")
OUT="$ROOT/target/app-tour"

fail() {
    echo "app-tour: $*" >&2
    exit 1
}

[[ -x $APP ]] || fail "$APP is missing: npx tauri build --debug --bundles deb"
[[ -x $IZWI ]] || fail "$IZWI is missing: cargo build --workspace"
[[ -d .assets/models/whisper-tiny.en && -d .assets/voices/en_US-joe-medium ]] ||
    fail "assets are missing: scripts/fetch-assets.sh"
command -v WebKitWebDriver >/dev/null || fail "WebKitWebDriver is missing (apt: webkit2gtk-driver)"
if ! command -v tauri-driver >/dev/null; then
    [[ -x $HOME/.cargo/bin/tauri-driver ]] ||
        cargo install tauri-driver --version '^2' --locked --quiet
    PATH=$HOME/.cargo/bin:$PATH
fi

rm -rf "$OUT"
mkdir -p "$OUT"
source scripts/fresh-home.sh
izwi() { "$IZWI" "$@"; }
job_id() { izwi history --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])'; }

izwi models import .assets/models/whisper-tiny.en >/dev/null
izwi models import .assets/voices/en_US-joe-medium/en_US-joe-medium.onnx >/dev/null
voice=$(izwi voices list --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
izwi speak --voice "$voice" --text "Hello from Izwi. This is a speech job." --output "$D/hello.wav" >/dev/null
speak_job=$(job_id)
printf '%s\n' "The first line of the script." "The second line." "And the third." >"$D/script.txt"
izwi speak --voice "$voice" --lines "$D/script.txt" --output-dir "$D/takes" >/dev/null
batch_job=$(job_id)
izwi transcribe .assets/speech/jfk.wav >/dev/null
transcribe_job=$(job_id)
izwi models import .assets/models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf \
    --name smollm2 >/dev/null
echo "What is the capital of France?" | izwi chat --llm local/smollm2 >/dev/null

xvfb-run -a -s "-screen 0 1280x800x24" bash -c '
    tauri-driver --port 4444 >"$0/tauri-driver.log" 2>&1 &
    driver=$!
    trap "kill $driver 2>/dev/null || true" EXIT
    for _ in $(seq 50); do
        (echo >/dev/tcp/127.0.0.1/4444) 2>/dev/null && break
        sleep 0.2
    done
    node scripts/app-tour.mjs "$@"
' "$OUT" "$APP" "$OUT" "$speak_job" "$batch_job" "$transcribe_job"

if [[ ${1:-} == --update-docs ]]; then
    cp "$OUT"/history-speak.png "$OUT"/history-batch.png "$OUT"/models-import.png \
        "$OUT"/chat.png docs/img/
    echo "app-tour: screenshots copied into docs/img/"
fi
