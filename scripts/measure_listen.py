"""Live dictation with Whisper on real speech, measured: the LibriVox clips of
.assets/speech/librivox (scripts/fetch-assets.sh) fed at real-time pace to
`izwi listen --realtime --json`, beside `izwi transcribe` of the same clips.

    python3 scripts/measure_listen.py --izwi target/release/izwi [--models tiny.en,base]

For each model it prints the word error rate against the clips' reference texts of the
live final text and of the offline transcript, and the partial latency: for each word
of the offline transcript (its end time from --word-timestamps), the time from the end
of that word in the audio to the first moment the live text on screen (final text so far
plus the partial) holds that many words; p50 and p90 over every word of every clip, and
whether the first partial came before the clip ended.
"""

import argparse
import json
import pathlib
import re
import subprocess
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
MODELS = {"tiny.en": "models/whisper-tiny.en", "base": "models/whisper-base"}


def words(text):
    return re.sub(r"[^a-z0-9' ]", " ", text.lower().replace("-", " ")).split()


def edits(ref, hyp):
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (r != h))
    return row[-1]


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def run(izwi, data, args):
    out = subprocess.run([izwi, "--data-dir", data, *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"izwi {' '.join(args)}: {out.stderr}")
    return out.stdout


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--izwi", required=True)
    parser.add_argument("--models", default="tiny.en,base")
    args = parser.parse_args()
    clips = sorted((ROOT / ".assets/speech/librivox").glob("*.wav"))
    with tempfile.TemporaryDirectory() as data:
        # Dictation with Whisper finds the pauses with Silero VAD.
        run(args.izwi, data, ["models", "vad", str(ROOT / ".assets/models/silero-vad/silero_vad_16k_op15.onnx")])
        for name in args.models.split(","):
            run(args.izwi, data, ["models", "import", str(ROOT / ".assets" / MODELS[name]), "--name", name])
            model = f"local/{name}"
            ref_words = live_errors = offline_errors = 0
            latencies, early = [], 0
            for clip in clips:
                reference = words(clip.with_suffix(".txt").read_text())
                offline = json.loads(
                    run(args.izwi, data, ["transcribe", str(clip), "--model", model, "--language", "en",
                                          "--format", "json", "--word-timestamps"])
                )
                timed = [w for s in offline["segments"] for w in s.get("words", [])]
                offline_text = words(" ".join(s["text"] for s in offline["segments"]))
                events = [
                    json.loads(line)
                    for line in run(args.izwi, data, ["listen", "--model", model, "--language", "en",
                                                      "--input", str(clip), "--realtime", "--json",
                                                      "--no-save"]).splitlines()
                ]
                finals, shown = [], []
                for e in events:
                    if e["type"] == "final":
                        finals.append(e["text"])
                        on_screen = " ".join(finals)
                    else:
                        on_screen = " ".join(finals + [e["text"]])
                    shown.append((e["emitted_at_s"], len(words(on_screen))))
                live_text = words(" ".join(finals))
                duration = max(w["end"] for w in timed) if timed else 0.0
                partials = [e for e in events if e["type"] == "partial"]
                early += bool(partials and partials[0]["emitted_at_s"] < duration)
                for i, w in enumerate(timed):
                    first = next((t for t, n in shown if n > i), None)
                    if first is not None:
                        latencies.append(first - w["end"])
                ref_words += len(reference)
                live_errors += edits(reference, live_text)
                offline_errors += edits(reference, offline_text)
            print(
                f"{name}: {len(clips)} clips, {ref_words} words; WER live {100 * live_errors / ref_words:.1f}% "
                f"({live_errors}), offline {100 * offline_errors / ref_words:.1f}% ({offline_errors}); "
                f"partial latency p50 {percentile(latencies, 50):.2f} s, p90 {percentile(latencies, 90):.2f} s "
                f"over {len(latencies)} words; first partial before the clip ended in {early} of {len(clips)}"
            )


if __name__ == "__main__":
    main()
