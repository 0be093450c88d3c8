#!/bin/sh
# capture.sh copies the /proc files hangdoc's sampler reads for one live
# process into a directory tree that NewFS can read, so that tests run on a
# real process's evidence without the process.
#
# Usage: capture.sh PID [DEST]
#
# DEST defaults to the directory holding this script's "proc" subdirectory
# (sampler/testdata/proc); the files land in DEST/PID/. Run it as root or as
# the process owner: syscall and wchan need ptrace access.
#
# What is copied, as regular files (read with cat: /proc sizes are not to be
# trusted):
#   PID/{stat,status,syscall,cmdline,comm}
#   PID/maps                        first 20 lines only
#   PID/task/TID/{stat,status,wchan,syscall}   for every thread
# and, as symbolic links with the live links' targets (readlink), PID/fd/N
# for N in 0..9. PID/mem is deliberately absent: a fixture has no memory,
# so futex words cannot be read from it. task/TID/schedstat, which the
# sampler reads only for threads in state R, is not copied: a hung victim's
# threads sleep.
#
# The fixture sampler/testdata/proc/32266 was made, from the repository
# root, from the pipeholder victim (testdata/victims/pipeholder.c) with
# burncpu.c preloaded so that its main thread has CPU time to parse:
#
#   gcc -O0 -g -pthread -Wall -o /tmp/pipeholder testdata/victims/pipeholder.c
#   gcc -O2 -shared -fPIC -Wall -o /tmp/burncpu.so sampler/testdata/burncpu.c
#   LD_PRELOAD=/tmp/burncpu.so /tmp/pipeholder </dev/null >/tmp/pipeholder.out 2>&1 &
#   until grep -q '^ready ' /tmp/pipeholder.out; do sleep 0.1; done
#   cat /tmp/pipeholder.out          # the ready line fixture_test.go records
#   sampler/testdata/capture.sh PID
#   kill -9 READER PID               # the reader= child and the victim
#
# A new capture has new pids, addresses and counts: update the constants
# and expectations in fixture_test.go (and parse_test.go's statMain) with it.
#
# The files are read one after another while the process runs; capture a
# process that is hung, or the files will disagree with each other.
set -eu

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	echo "usage: $0 PID [DEST]" >&2
	exit 2
fi
pid=$1
dest=${2:-$(dirname "$0")/proc}
src=/proc/$pid
[ -d "$src" ] || { echo "capture: no process $pid" >&2; exit 1; }

out=$dest/$pid
rm -rf "$out"
mkdir -p "$out/task" "$out/fd"

for f in stat status syscall cmdline comm; do
	cat "$src/$f" >"$out/$f"
done
head -n 20 "$src/maps" >"$out/maps"

for t in "$src"/task/*; do
	tid=${t##*/}
	mkdir -p "$out/task/$tid"
	for f in stat status wchan syscall; do
		cat "$t/$f" >"$out/task/$tid/$f"
	done
done

for n in 0 1 2 3 4 5 6 7 8 9; do
	if target=$(readlink "$src/fd/$n" 2>/dev/null); then
		ln -s "$target" "$out/fd/$n"
	fi
done

echo "captured $src into $out" >&2
