#!/usr/bin/env bash
# Build the Porcupine side of benchmarks/vs_porcupine.py: porcbench, linked against a Porcupine
# checkout (no network: Porcupine has no dependencies; Go from Debian's golang-go is enough).
#   benchmarks/porcupine_main/build.sh PORCUPINE_CHECKOUT OUTPUT_BINARY
set -euo pipefail
src=$(cd "$(dirname "$0")" && pwd)
porc=$(cd "${1:?porcupine checkout}" && pwd)
out=$(realpath -m "${2:?output binary}")
# Inside the checkout's own module, so the import needs no go.mod replace and no proxy.
mkdir -p "$porc/cmd/porcbench"
cp "$src/main.go" "$porc/cmd/porcbench/main.go"
cd "$porc" && GOPROXY=off GOFLAGS=-mod=mod go build -o "$out" ./cmd/porcbench
