#!/usr/bin/env bash
# Installs the Debian packages vfetch needs that are missing. Usage: install-deps.sh [build|test|demo|bench]
set -euo pipefail

packages=(libcurl4-openssl-dev libavformat-dev libavcodec-dev libavutil-dev)  # build: libcurl and FFmpeg headers and libraries
case "${1:-build}" in
  test)  packages+=(curl ffmpeg) ;;                   # tests: curl as a second client, ffmpeg/ffprobe as real players
  demo)  packages+=(ffmpeg) ;;                        # demo: makes a sample video
  bench) packages+=(ffmpeg nginx-light aria2 axel wget curl time iproute2) ;;
  build) ;;
  *) echo "usage: $0 [build|test|demo|bench]" >&2; exit 2 ;;
esac

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "installing: ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
