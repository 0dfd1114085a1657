#!/usr/bin/env bash
# The system packages Izwi needs, installed when missing (as root, or with sudo that
# asks no password), else the exact command to install them is printed and this fails.
#
#   scripts/system-packages.sh          what building and running the app needs
#   scripts/system-packages.sh --test   also what the tests need (a virtual screen,
#                                       screenshots, OCR, Chromium for the UI's tests,
#                                       WebKit's WebDriver for the app tour,
#                                       PulseAudio for the microphone and speaker tests,
#                                       XTest to press the global dictation shortcut)
#
# Debian and Ubuntu are handled; on macOS only espeak-ng is needed (Homebrew); other
# systems get the list of what to install.
set -euo pipefail

# Tauri's build needs (GTK, WebKitGTK, ...), ALSA for audio, espeak-ng for Piper voices.
app=(build-essential pkg-config curl file libwebkit2gtk-4.1-dev libgtk-3-dev libsoup-3.0-dev
    libjavascriptcoregtk-4.1-dev libxdo-dev libssl-dev libayatana-appindicator3-dev
    librsvg2-dev libasound2-dev espeak-ng)
tests=(xvfb xauth webkit2gtk-driver imagemagick tesseract-ocr tesseract-ocr-eng chromium
    pulseaudio pulseaudio-utils libasound2-plugins libxtst6)

wanted=("${app[@]}")
[[ ${1:-} == --test ]] && wanted+=("${tests[@]}")

if [[ $(uname -s) == Darwin ]]; then
    command -v espeak-ng >/dev/null && exit 0
    echo "Izwi needs espeak-ng for its voices: brew install espeak-ng" >&2
    exit 1
fi

if ! command -v dpkg-query >/dev/null; then
    command -v espeak-ng >/dev/null && pkg-config --exists webkit2gtk-4.1 2>/dev/null && exit 0
    echo "Izwi needs WebKitGTK 4.1, GTK 3, libsoup 3, ALSA and OpenSSL development files," >&2
    echo "a C toolchain, pkg-config and espeak-ng; install them with your package manager." >&2
    exit 1
fi

missing=()
for package in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
        missing+=("$package")
done
((${#missing[@]})) || exit 0

if [[ $(id -u) == 0 ]]; then
    sudo=()
elif sudo -n true 2>/dev/null; then
    sudo=(sudo)
else
    echo "Izwi needs these system packages; install them with:" >&2
    echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
fi
echo "system-packages: apt-get install ${missing[*]}" >&2
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
