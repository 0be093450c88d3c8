#!/usr/bin/env bash
# java.sh: hang every Java victim of testdata/victims/java with each JDK and
# take its thread dumps: jstack -l, jcmd Thread.print -l -e, two jstack -l -e
# dumps a second apart in one file (snapshots), and on JDK 21+ the JSON
# thread dump (jcmd Thread.dump_to_file -format=json). Each dump gets an
# .expect; its "ready:" line is the victim's, which names its threads by
# their Linux tids (a dump's nid=, in hex).
#
#   JDKS="/usr/lib/jvm/java-17-openjdk-amd64" bash testdata/corpus/gen/java.sh
source "$(dirname "$0")/lib.sh"

JDKS=${JDKS:-"/usr/lib/jvm/java-17-openjdk-amd64 /usr/lib/jvm/temurin-25-jdk-amd64"}
JSRC=$(cd "$CORPUS/../victims/java" && pwd)
OUT=$DUMPS/jvm
mkdir -p "$OUT"

# expect_of VICTIM: the .expect lines every dump of VICTIM shares.
expect_of() {
	case $1 in
	SyncAbba) printf 'verdict: deadlock\nholder: thread abba-1\nbasis: exact\nholder: thread abba-2\nbasis: exact\ncycle: thread abba-1, thread abba-2\n' ;;
	LockAbba) printf 'verdict: deadlock\nholder: thread lock-abba-1\nbasis: exact\nholder: thread lock-abba-2\nbasis: exact\ncycle: thread lock-abba-1, thread lock-abba-2\n' ;;
	LockOnSocket) printf 'verdict: blocked\nholder: thread holder\nbasis: exact\n' ;;
	SpinHolder) printf 'holder: thread spinner\nbasis: exact\n' ;;
	IdlePool) printf 'verdict: idle\n' ;;
	FutureNever) printf 'verdict: blocked\n' ;;
	SemaphorePool) printf 'verdict: blocked\n' ;;
	VirtualBehind) printf 'verdict: blocked\nholder: thread holder\nbasis: exact\n' ;;
	esac
}

for jdk in $JDKS; do
	v=$(run 30 "$jdk/bin/java" -version 2>&1 | head -1)
	major=$(printf '%s' "$v" | sed -E 's/.*version "([0-9]+).*/\1/')
	echo "$v" >>"$WORK/versions.txt"
	cls=$WORK/java$major
	rm -rf "$cls" && mkdir -p "$cls"
	srcs=()
	for f in "$JSRC"/*.java; do
		[ "$major" -lt 21 ] && [ "$(basename "$f")" = VirtualBehind.java ] && continue
		srcs+=("$f")
	done
	run 300 nice -n 10 "$jdk/bin/javac" -d "$cls" "${srcs[@]}"
	for f in "${srcs[@]}"; do
		victim=$(basename "$f" .java)
		[ "$victim" = Victim ] && continue
		name=$(printf '%s' "$victim" | tr 'A-Z' 'a-z')-jdk$major
		log "$name"
		start "$name" "$jdk/bin/java" -Xmx64m -cp "$cls" "$victim"
		expect=$(expect_of "$victim")
		if [ "$victim" != VirtualBehind ]; then
			run 60 "$jdk/bin/jstack" -l "$VPID" >"$OUT/$name-jstack.txt"
			{ printf '%s\n' "$expect"; [ "$victim" = SpinHolder ] && echo 'verdict: working'; echo "producer: jstack"; echo "ready: ${READY_LINE#ready }"; } >"$OUT/$name-jstack.expect"
			run 60 "$jdk/bin/jcmd" "$VPID" Thread.print -l -e >"$OUT/$name-jcmd.txt"
			{ printf '%s\n' "$expect"; [ "$victim" = SpinHolder ] && echo 'verdict: working'; echo "producer: jcmd"; echo "ready: ${READY_LINE#ready }"; } >"$OUT/$name-jcmd.expect"
			{
				run 60 "$jdk/bin/jstack" -l -e "$VPID"
				sleep 1
				run 60 "$jdk/bin/jstack" -l -e "$VPID"
			} >"$OUT/$name-twice.txt"
			{ printf '%s\n' "$expect"; [ "$victim" = SpinHolder ] && echo 'verdict: spinning'; echo "producer: jstack"; echo "ready: ${READY_LINE#ready }"; } >"$OUT/$name-twice.expect"
		fi
		if [ "$major" -ge 21 ]; then
			rm -f "$WORK/run/$name.json"
			run 60 "$jdk/bin/jcmd" "$VPID" Thread.dump_to_file -format=json "$WORK/run/$name.json" >/dev/null
			cp "$WORK/run/$name.json" "$OUT/$name-threads.json"
			case $victim in
			LockAbba | LockOnSocket | VirtualBehind)
				# The JSON dump names what a thread parks on, not who owns it.
				json_expect=$(printf 'verdict: blocked\nnote: JDK %s'"'"'s JSON thread dump names a park blocker but not its owner, so no holder of a ReentrantLock is in it' "$major") ;;
			SpinHolder) json_expect=$(printf '%s\nverdict: working' "$expect") ;;
			*) json_expect=$expect ;;
			esac
			{ printf '%s\n' "$json_expect"; echo "producer: jcmd-json"; echo "ready: ${READY_LINE#ready }"; } >"$OUT/$name-threads.expect"
		fi
		stop
	done
done
