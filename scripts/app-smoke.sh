#!/usr/bin/env bash
# The real desktop app, end to end, on a virtual screen: a fresh data folder with the
# tiny.en model imported through the CLI, the app started with .assets/speech/jfk.wav
# as its argument (as "Open with Izwi" does), the job followed through the CLI until it
# is done, then a screenshot of the window that must show the transcript and a player
# that loaded the audio (OCR).
#
#   scripts/app-smoke.sh
#
# Needs: the app built with the UI embedded (`npx tauri build --debug --bundles deb`,
# or `--no-bundle`; a plain `cargo build` app loads the dev server instead), the izwi
# CLI (`cargo build --workspace`), the assets (scripts/fetch-assets.sh), and xvfb-run,
# ImageMagick's import and tesseract. Writes target/app-smoke/: transcript.png, the
# OCR text, the app's log.
#
# Environment:
#   IZWI_APP   the app binary (default $CARGO_TARGET_DIR or target, then debug/izwi-desktop)
#   IZWI_BIN   the CLI (default $CARGO_TARGET_DIR or target, then debug/izwi)
#   TIMEOUT    seconds to wait for the job (default 180)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
APP=$(realpath -m "${IZWI_APP:-${CARGO_TARGET_DIR:-target}/debug/izwi-desktop}")
IZWI=$(realpath -m "${IZWI_BIN:-${CARGO_TARGET_DIR:-target}/debug/izwi}")
OUT="$ROOT/target/app-smoke"
JFK="$ROOT/.assets/speech/jfk.wav"
TIMEOUT=${TIMEOUT:-180}

fail() {
    echo "app-smoke: $*" >&2
    exit 1
}

# ---- inside the virtual screen (xvfb-run calls this script again)
if [[ ${1:-} == --inside ]]; then
    D=$2
    "$APP" "$JFK" >"$OUT/app.log" 2>&1 &
    app=$!
    trap 'kill $app 2>/dev/null || true; wait $app 2>/dev/null || true' EXIT

    status=none
    for ((i = 0; i < TIMEOUT; i++)); do
        kill -0 $app 2>/dev/null || { tail -20 "$OUT/app.log" >&2; fail "the app exited"; }
        status=$("$IZWI" --data-dir "$D/data" history --json 2>/dev/null |
            python3 -c 'import json,sys; j=json.load(sys.stdin); print(j[0]["status"] if j else "none")' ||
            echo none)
        [[ $status == done || $status == failed || $status == cancelled ]] && break
        sleep 1
    done
    echo "app-smoke: job $status after ${i}s"
    [[ $status == done ]] || {
        import -window root "$OUT/transcript.png" || true
        fail "the job did not finish (status: $status); see $OUT"
    }

    # The UI opens the transcript when the job is done: give it a few tries.
    for ((try = 1; try <= 10; try++)); do
        sleep 2
        import -window root "$OUT/transcript.png"
        # OCR reads dark-on-light best: try the shot as it is and inverted, enlarged.
        # (3x in grey reads this UI's text best; 2x alone misread "country" in a run.)
        convert "$OUT/transcript.png" -resize 300% -colorspace Gray "$OUT/ocr-a.png"
        convert "$OUT/transcript.png" -resize 200% -negate "$OUT/ocr-b.png"
        { tesseract "$OUT/ocr-a.png" - 2>/dev/null; tesseract "$OUT/ocr-b.png" - 2>/dev/null; } >"$OUT/transcript.txt"
        if grep -qi "could not be played" "$OUT/transcript.txt"; then
            fail "the player cannot play the file (see $OUT/transcript.png)"
        fi
        if grep -qi "country" "$OUT/transcript.txt" && grep -qi "americans\|fellow" "$OUT/transcript.txt"; then
            rm -f "$OUT"/ocr-*.png
            echo "app-smoke: the window shows the transcript (target/app-smoke/transcript.png)"
            exit 0
        fi
    done
    fail "the screenshot does not show the transcript; OCR read: $(tr '\n' ' ' <"$OUT/transcript.txt" | head -c 400)"
fi

# ---- outside: check, set up a fresh data folder, run the app on a virtual screen
[[ -x $APP ]] || fail "$APP is missing: npx tauri build --debug --bundles deb"
[[ -x $IZWI ]] || fail "$IZWI is missing: cargo build --workspace"
[[ -f $JFK && -d .assets/models/whisper-tiny.en ]] || fail "assets are missing: scripts/fetch-assets.sh"
for tool in xvfb-run import convert tesseract python3; do
    command -v $tool >/dev/null || fail "$tool is missing (apt: xvfb imagemagick tesseract-ocr python3)"
done

rm -rf "$OUT"
mkdir -p "$OUT"
source scripts/fresh-home.sh
"$IZWI" --data-dir "$D/data" models import .assets/models/whisper-tiny.en --name tiny >/dev/null
# The only installed model is the default one (the app asks the runtime for it).
"$IZWI" --data-dir "$D/data" models list --json |
    python3 -c 'import json,sys; ids=[m["id"] for m in json.load(sys.stdin) if m["status"]=="installed"]; assert ids==["local/tiny"], ids'

xvfb-run -a -s "-screen 0 1280x800x24" "$0" --inside "$D"
