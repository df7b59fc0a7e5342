#!/usr/bin/env bash
# vfetch's SHA-256 (`--checksum`) and AES-128-CBC (HLS segments) against openssl on the same file,
# side by side: each rep runs vfetch's code (CryptoFile, release) then openssl, and the report gives
# the medians of wall and CPU time (user + sys) and openssl's time divided by vfetch's (1.0 = as
# fast, above = faster).
#   sha256:  CryptoFile sha256 FILE          vs  openssl dgst -sha256 FILE
#   decrypt: CryptoFile decrypt KEY IV COPY  vs  openssl enc -d -aes-128-cbc -K KEY -iv IV -in ENC -out OUT
#            (in place in 1 MiB steps, as StreamParts does; the copy it decrypts is made before the clock)
# Options: --reps N (5), --mib N (1024: the file's size), --dir DIR (/var/tmp: on disk, never tmpfs).
set -euo pipefail

REPS=5 MIB=1024 DIR=/var/tmp
while (($#)); do
    case "$1" in
        --reps) REPS=${2:?}; shift 2 ;;
        --mib) MIB=${2:?}; shift 2 ;;
        --dir) DIR=${2:?}; shift 2 ;;
        *) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 2 ;;
    esac
done
cd "$(dirname "$0")"
swift build -c release --product CryptoFile >&2
BIN=$(swift build -c release --show-bin-path)/CryptoFile
WORK=$(mktemp -d "$DIR/vfetch-crypto.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
KEY=000102030405060708090a0b0c0d0e0f IV=f0e0d0c0b0a090807060504030201000
head -c "$((MIB << 20))" /dev/urandom >"$WORK/plain"
openssl enc -aes-128-cbc -K $KEY -iv $IV -in "$WORK/plain" -out "$WORK/enc"
echo "file: $MIB MiB on $(df --output=fstype "$WORK" | tail -1), load before: $(cut -d' ' -f1-3 /proc/loadavg)"

# timed LABEL COMMAND...: runs it (its output in $WORK/out), appends "LABEL wall user sys" to $WORK/raw
timed() {
    local label=$1; shift
    /usr/bin/time -f "$label %e %U %S" -a -o "$WORK/raw" "$@" >"$WORK/out"
}
for ((rep = 1; rep <= REPS; rep++)); do
    timed sha256-vfetch "$BIN" sha256 "$WORK/plain"
    ours=$(cut -d' ' -f1 "$WORK/out")
    timed sha256-openssl openssl dgst -sha256 -r "$WORK/plain"
    [[ $ours == "$(cut -d' ' -f1 "$WORK/out")" ]] || { echo "digests differ: $ours" >&2; exit 1; }
    cp "$WORK/enc" "$WORK/copy"
    timed decrypt-vfetch "$BIN" decrypt $KEY $IV "$WORK/copy"
    timed decrypt-openssl openssl enc -d -aes-128-cbc -K $KEY -iv $IV -in "$WORK/enc" -out "$WORK/openssl-plain"
    if ! cmp -s "$WORK/copy" "$WORK/plain" || ! cmp -s "$WORK/openssl-plain" "$WORK/plain"; then
        echo "decryption differs" >&2
        exit 1
    fi
    rm -f "$WORK/copy" "$WORK/openssl-plain"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$WORK/raw" "$MIB" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    label, wall, user, system = line.split()
    runs.setdefault(label, []).append((float(wall), float(user) + float(system)))
mib = int(sys.argv[2])
median = {label: (statistics.median(w for w, _ in r), statistics.median(c for _, c in r)) for label, r in runs.items()}
print(f"{'':16} {'wall':>8} {'cpu':>8} {'MB/s (wall)':>12} {'MB/s (cpu)':>11}   medians of {len(next(iter(runs.values())))}")
for label, (wall, cpu) in median.items():
    print(f"{label:16} {wall:7.2f}s {cpu:7.2f}s {mib * 1.048576 / wall:12.0f} {mib * 1.048576 / cpu:11.0f}")
for name in ("sha256", "decrypt"):
    (ow, oc), (vw, vc) = median[name + "-openssl"], median[name + "-vfetch"]
    print(f"{name}: vfetch at {ow / vw:.2f}x openssl's speed (wall), {oc / vc:.2f}x (cpu)")
PY
