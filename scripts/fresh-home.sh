# Sourced by the scripts that run the real app (app-smoke.sh, app-tour.sh): a scratch
# folder $D, removed at exit, holding the home, data folder and Hugging Face cache the
# app and the CLI use, so nothing of this machine's Izwi, models or window state leaks in.
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
mkdir -p "$D/home"
export HOME="$D/home" XDG_CONFIG_HOME="$D/home/.config" XDG_DATA_HOME="$D/home/.local/share" \
    XDG_CACHE_HOME="$D/home/.cache" HF_HOME="$D/hf" IZWI_DATA_DIR="$D/data"
