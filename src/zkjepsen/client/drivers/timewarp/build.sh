#!/bin/sh
# Build zkj-timewarp (static: it runs in any image) and the C clock probe into $1.
set -e
out=${1:-.}
here=$(dirname "$0")
mkdir -p "$out"
cc -O2 -fPIC -fno-jump-tables -ffreestanding -fno-stack-protector -fno-builtin \
   -fno-asynchronous-unwind-tables -fcf-protection=none -c "$here/stub.c" -o "$out/stub.o"
cc -O2 -Wall -static "$here/launcher.c" "$out/stub.o" -o "$out/zkj-timewarp"
cc -O2 -Wall "$here/probe.c" -o "$out/clockprobe"
rm -f "$out/stub.o"
