#!/usr/bin/env bash
# check.sh: sanity of the corpus, not of hangdoc: every dump has an
# expectation with a verdict, and every goroutine or thread an expectation
# names as holder or cycle member is in the dump it describes.
. "$(dirname "$0")/lib.sh"
cd "$DUMPS"
bad=0
find . -type f ! -name '*.expect' ! -name VERSIONS.txt | sed 's|^\./||' | LC_ALL=C sort | while read -r f; do
	base=${f%.txt.gz}; base=${base%.txt}; base=${base%.json}
	exp=$base.expect
	[ -f "$exp" ] || exp=${base%.[0-9]}.expect
	[ -f "$exp" ] || { echo "no expect: $f"; continue; }
	grep -q '^verdict: ' "$exp" || echo "no verdict: $exp"
	case $f in *.gz) text=$(gzip -dc "$f") ;; *) text=$(cat "$f") ;; esac
	sed -n -e 's/^holder: //p' -e 's/^cycle: //p' "$exp" | tr ',' '\n' | sed 's/^ *//' | sort -u | while read -r who; do
		case $who in
		"goroutine "*) grep -aqE "goroutine ${who#goroutine } [[g]" <<<"$text" || echo "$f: $who not in dump" ;;
		"thread 0x"*) grep -aqi "${who#thread }" <<<"$text" || echo "$f: $who not in dump" ;;
		"thread "*) grep -aqF "${who#thread }" <<<"$text" || echo "$f: $who not in dump" ;;
		esac
	done
	# mentions are facts of the dump, except the two that describe the file itself
	sed -n 's/^mentions: //p' "$exp" | while read -r m; do
		case $m in truncated | "no stack dump found") continue ;; esac
		grep -aqF -- "$m" <<<"$text" || echo "$f: mention \"$m\" not in dump"
	done
	n=$(sed -n 's/^goroutines: //p' "$exp")
	if [ -n "$n" ] && [ "$n" = 0 ]; then echo "$f: goroutines: 0"; fi
done
