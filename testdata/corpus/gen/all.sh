#!/usr/bin/env bash
# all.sh: regenerate the whole corpus: build and hang every victim with every
# Go toolchain and Python, take the dumps, write the expectations, the 10k
# gzipped runtime.Stack dump, dumps/VERSIONS.txt and README's index.
# Take about 40 minutes on 2 shared cores. The 100,000-goroutine dump
# (about 30 MiB, never committed) is `gen/big.sh 100000`, into $CORPUS_WORK
# (default /tmp/hangdoc-corpus).
set -euo pipefail
gen=$(cd "$(dirname "$0")" && pwd)
work=${CORPUS_WORK:-/tmp/hangdoc-corpus}
mkdir -p "$work"
rm -f "$work/versions.txt"
bash "$gen/go.sh"
bash "$gen/go_extra.sh"
bash "$gen/go_locks.sh"
bash "$gen/python.sh"
bash "$gen/py_lockid.sh"
bash "$gen/java.sh"
bash "$gen/big.sh"
{
	echo "# tool versions of the last gen/all.sh run"
	timeout 30 py-spy --version </dev/null
	timeout 30 script --version </dev/null
	timeout 30 curl --version </dev/null | head -1
	sort -u "$work/versions.txt"
} >"$gen/../dumps/VERSIONS.txt"
bash "$gen/index.sh"
