#!/usr/bin/env bash
# Installs the Debian packages vfetch needs that are missing. Usage: install-deps.sh [build|test|demo|bench|browser|redbot|tier]
set -euo pipefail

packages=(libcurl4-openssl-dev libavformat-dev libavcodec-dev libavutil-dev libxml2)  # build: libcurl and FFmpeg headers and libraries; libxml2 for Foundation's XMLParser (DASH)
case "${1:-build}" in
  test)  packages+=(curl ffmpeg strace openssl) ;;    # tests: curl as a second client, ffmpeg/ffprobe as real players, strace holds a checkpoint, openssl checks AES
  demo)  packages+=(ffmpeg) ;;                        # demo: makes a sample video
  bench) packages+=(ffmpeg mpv nginx-light aria2 axel wget curl time iproute2) ;;  # mpv: playback.sh's player with its own cache; + matplotlib, below
  browser) packages+=(ffmpeg chromium) ;;           # make test-browser: fixture video, Debian's headless Chromium; + playwright, below
  redbot) packages+=(nginx-light ffmpeg curl) ;;    # make redbot: nginx to compare serve with, a sample video; + redbot, below
  tier) packages+=(nginx ffmpeg openssl) ;;          # make tier: Debian's nginx (slice, auth_basic) in front of serve, ffmpeg as players, openssl hashes the password
  build) packages+=(groff-base) ;;                   # build: groff checks the man page (scripts/man-page.sh)
  *) echo "usage: $0 [build|test|demo|bench|browser|redbot|tier]" >&2; exit 2 ;;
esac

# demo and bench run python3 too; any python3 on PATH will do
case "${1:-build}" in demo|bench|browser|redbot|tier) command -v python3 >/dev/null || packages+=(python3) ;; esac
# bench: Benchmarks/streams.sh makes a venv for its pinned yt-dlp and streamlink (PyPI); Debian's python3 needs python3-venv
if [ "${1:-build}" = bench ] && ! python3 -c 'import ensurepip, venv' 2>/dev/null; then packages+=(python3-venv); fi

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# bench: matplotlib for Benchmarks/plots.py, for the python3 on PATH (which may not be Debian's).
# pip first; where pip is missing or refuses (PEP 668, Debian's own python3), Debian's package.
if [ "${1:-build}" = bench ] && ! python3 -c 'import matplotlib' 2>/dev/null; then
  echo "installing: matplotlib (pip)"
  if ! python3 -m pip install -q matplotlib; then
    echo "pip could not install matplotlib; trying Debian's python3-matplotlib" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends python3-matplotlib >/dev/null \
      || echo "WARNING: matplotlib not installed; the benchmarks will run without plots" >&2
  fi
fi

# browser: Playwright (Python) drives Debian's chromium by its path. Only the Python package: never
# `playwright install`, which downloads a browser build of its own. Debian has no python3-playwright.
if [ "${1:-build}" = browser ] && ! python3 -c 'import playwright.sync_api' 2>/dev/null; then
  echo "installing: playwright (pip)"
  python3 -m pip install -q playwright || python3 -m pip install -q --break-system-packages playwright
fi

# redbot: REDbot (lint for HTTP) from PyPI, for scripts/redbot-check.sh. Debian has no python3-redbot.
if [ "${1:-build}" = redbot ] && ! python3 -c 'import redbot' 2>/dev/null; then
  echo "installing: redbot (pip)"
  python3 -m pip install -q redbot || python3 -m pip install -q --break-system-packages redbot
fi

# browser: the JavaScript players of Tests/Browser/streams.py, into .build/browser-players (never into git).
# npm is out of reach here and on CI, and no Debian package ships them, so each comes from a PyPI package
# that does, pinned by the package's version and the file's SHA-256 (both Apache-2.0):
#   hls.js 0.14.3, the UMD build exposing Hls, as OctoPrint 1.11.8's wheel vendors it;
#   video.js 7.5.5, whose http-streaming plays DASH, from the js.videojs 7.5.5 sdist (no PyPI or
#   Debian package ships dash.js).
if [ "${1:-build}" = browser ]; then
  players="$(cd "$(dirname "$0")/.." && pwd)/.build/browser-players"
  mkdir -p "$players"
  fetch_player() {  # PACKAGE==VERSION, the file's path in its archive, the name to give it, its SHA-256
    local target="$players/$3"
    if [ -f "$target" ] && echo "$4  $target" | sha256sum --check --status; then return; fi
    echo "installing: $3 (from $1, pip)"
    local download
    download="$(mktemp -d)"
    python3 -m pip download -q --no-deps "$1" -d "$download"
    python3 - "$download" "$2" "$target.new" <<'PY'
import os, sys, tarfile, zipfile
folder, member, target = sys.argv[1:]
archive = os.path.join(folder, os.listdir(folder)[0])
if archive.endswith(".whl"):
    data = zipfile.ZipFile(archive).read(member)
else:
    data = tarfile.open(archive).extractfile(member).read()
with open(target, "wb") as file:
    file.write(data)
PY
    rm -rf "$download"
    if ! echo "$4  $target.new" | sha256sum --check --status; then
      rm -f "$target.new"
      echo "$3 from $1 does not have the pinned SHA-256 $4" >&2
      exit 1
    fi
    mv "$target.new" "$target"
  }
  fetch_player octoprint==1.11.8 octoprint/static/js/lib/hls.js hls.js \
    4b97ac4496795731eb398f66ec3fb625f1a5639a157f96005ecd1efb52b62d5a
  fetch_player js.videojs==7.5.5 js.videojs-7.5.5/js/videojs/resources/video.min.js video.min.js \
    9fc57b49cdcfa478396b186bdd03fdaa108b8975e58d156f41bc011056388728
fi
