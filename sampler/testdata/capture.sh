#!/bin/sh
# capture.sh copies the /proc files hangdoc's sampler reads for live
# processes into a directory tree that NewFS can read, so that tests run on
# real processes' evidence without the processes.
#
# Usage: capture.sh [-fnbM] PID... [DEST]
#
#   -f  also copy fdinfo/N next to each fd/N, and take fds 0..63, not 0..9
#   -n  also copy net/tcp and net/tcp6 (the process's network namespace)
#   -b  also write DEST/stat: the btime line of /proc/stat, which is all
#       BootTime needs of it, after its first ("cpu") line: a real
#       /proc/stat never begins with btime, and BootTime finds it only
#       after a newline
#   -M  leave out maps
#
# Every PID lands in DEST/PID/ (an earlier capture of that pid there is
# replaced; other pids are left alone, so remove DEST to start afresh).
# DEST is the last argument when it is not a number; it defaults to the
# directory holding this script's "proc" subdirectory (sampler/testdata/proc).
# Run it as root or as the processes' owner: syscall and wchan need ptrace
# access.
#
# What is copied, as regular files (read with cat: /proc sizes are not to be
# trusted):
#   PID/{stat,status,syscall,cmdline,comm}
#   PID/maps                        first 20 lines only (not with -M)
#   PID/task/TID/{stat,status,wchan,syscall}   for every thread
#   PID/fdinfo/N                    with -f, for every fd/N copied
#   PID/net/{tcp,tcp6}              with -n; tcp6 is absent without IPv6.
#                                   Only the header and the entries of
#                                   sockets the captured processes hold
#                                   (socket:[N] among the fd/N copied) are
#                                   kept: the network namespace is the
#                                   whole machine's, and its other
#                                   sockets (other tests' victims, local
#                                   services) would make the capture
#                                   depend on what else was running.
#   stat                            with -b, at DEST's top, as /proc/stat is
# and, as symbolic links with the live links' targets (readlink), PID/fd/N
# for N in 0..9 (0..63 with -f). PID/mem is deliberately absent: a fixture
# has no memory, so futex words cannot be read from it; a fd/N link is only
# its text, so a captured pipe cannot be opened (ReadPipeFill fails on it).
# task/TID/schedstat, which the sampler reads only for threads in state R,
# is not copied: a hung victim's threads sleep. A thread that exits while
# it is being copied is left out.
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
# The multi-process trees sampler/testdata/proc-pipeline and proc-tcp
# (resolve_fixture_test.go) were made with -fnbM; their README.md files
# hold the recipes and the victims' ready lines.
#
# A new capture has new pids, addresses and counts: update the constants
# and expectations in the tests that read it (fixture_test.go and
# parse_test.go's statMain for proc/; resolve_fixture_test.go for the
# others) with it.
#
# The files are read one after another while the processes run; capture
# processes that are hung, or the files will disagree with each other.
set -eu

usage() {
	echo "usage: $0 [-fnbM] PID... [DEST]" >&2
	exit 2
}

fdinfo=false net=false btime=false maps=true
while getopts fnbM opt; do
	case $opt in
	f) fdinfo=true ;;
	n) net=true ;;
	b) btime=true ;;
	M) maps=false ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || usage

# The last argument is DEST unless it is a pid.
dest=$(dirname "$0")/proc
eval "last=\${$#}"
npids=$#
case $last in
'' | *[!0-9]*)
	[ $# -ge 2 ] || usage
	dest=$last
	npids=$(($# - 1))
	;;
esac
pids=
i=0
for a in "$@"; do
	i=$((i + 1))
	[ $i -le $npids ] || break
	case $a in
	'' | *[!0-9]*) usage ;;
	esac
	[ -d "/proc/$a" ] || { echo "capture: no process $a" >&2; exit 1; }
	pids="$pids $a"
done

fds="0 1 2 3 4 5 6 7 8 9"
if $fdinfo; then
	fds=$(seq 0 63)
fi

mkdir -p "$dest"
if $btime; then
	sed -n '1p; /^btime /p' /proc/stat >"$dest/stat"
fi

for pid in $pids; do
	src=/proc/$pid
	out=$dest/$pid
	rm -rf "$out"
	mkdir -p "$out/task" "$out/fd"

	for f in stat status syscall cmdline comm; do
		cat "$src/$f" >"$out/$f"
	done
	if $maps; then
		head -n 20 "$src/maps" >"$out/maps"
	fi

	for t in "$src"/task/*; do
		tid=${t##*/}
		mkdir -p "$out/task/$tid"
		for f in stat status wchan syscall; do
			if ! cat "$t/$f" >"$out/task/$tid/$f" 2>/dev/null; then
				echo "capture: thread $tid of $pid exited; left out" >&2
				rm -rf "$out/task/$tid"
				break
			fi
		done
	done

	$fdinfo && mkdir -p "$out/fdinfo"
	for n in $fds; do
		if target=$(readlink "$src/fd/$n" 2>/dev/null); then
			ln -s "$target" "$out/fd/$n"
			if $fdinfo; then
				cat "$src/fdinfo/$n" >"$out/fdinfo/$n"
			fi
		fi
	done

	echo "captured $src into $out" >&2
done

if $net; then
	# The sockets the captured processes hold: the N of their
	# socket:[N] links.
	held=" "
	for pid in $pids; do
		for l in "$dest/$pid"/fd/*; do
			[ -L "$l" ] || continue
			link=$(readlink "$l")
			case $link in
			socket:\[*\])
				link=${link#socket:[}
				held="$held${link%]} "
				;;
			esac
		done
	done
	for pid in $pids; do
		mkdir -p "$dest/$pid/net"
		for f in tcp tcp6; do
			[ -e "/proc/$pid/net/$f" ] || continue
			awk -v held="$held" 'NR == 1 || index(held, " " $10 " ")' \
				"/proc/$pid/net/$f" >"$dest/$pid/net/$f"
		done
	done
fi
