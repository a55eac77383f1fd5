#!/usr/bin/env bash
# consumer-check: fetch this working tree's modules as a user would, before
# they are tagged, and run what the README shows. scripts/modproxy writes a
# file-based module proxy holding the root module and redlockotel at
# $CONSUMER_VERSION; a fresh module in a temporary directory, with an empty
# module cache of its own, go gets each from it (everything else from the
# real proxy), runs go mod tidy, builds a program and runs it:
#
#   quickstart  the README's first program (the Go block after
#               <!-- program: examples/quickstart/main.go -->), which takes
#               and releases a lock on three nodes this script starts:
#               redis-server processes, or examples/mininodes (miniredis)
#               where redis-server is not installed
#   otel        redlockotel's Example, as a program
#
# For each it prints what the consumer downloaded (module zips, MB of module
# cache), the binary's size (as built, and stripped with -ldflags=-s -w)
# and the modules it links. It fails if a go get, the tidy, a build or a
# run fails, if the quickstart downloads more than $MAX_ZIPS module zips,
# or if the README's figure for them ("<!-- consumer-check: zips -->N")
# is not what was measured.
#
#   scripts/consumer-check.sh                     # this working tree
#   CONSUMER_REPO=DIR scripts/consumer-check.sh   # another checkout (its modules, its README)
#   CONSUMER_NODES=mininodes scripts/consumer-check.sh   # miniredis nodes even with redis-server
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "${CONSUMER_REPO:-$here/..}" && pwd)
version=${CONSUMER_VERSION:-v0.1.0}
max_zips=${MAX_ZIPS:-42}
go=${GO:-go}
real_proxy=$($go env GOPROXY)

work=$(mktemp -d "${TMPDIR:-/tmp}/redlock-consumer.XXXXXX")
node_pids=()
cleanup() {
	for pid in "${node_pids[@]}"; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	# The module cache is read-only; go clean -modcache removes it.
	GOMODCACHE="$work/modcache" GOFLAGS= $go clean -modcache >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

echo "consumer-check: proxy of $repo at $version"
(cd "$here/modproxy" && $go run . -out "$work/proxy" -version "$version" "$repo" "$repo/redlockotel")

# Three nodes for the quickstart, on free ports of 127.0.0.1.
free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 30000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
}
addrs=()
for _ in 1 2 3; do
	addrs+=("127.0.0.1:$(free_port)")
done
if [ "${CONSUMER_NODES:-}" != mininodes ] && command -v redis-server >/dev/null 2>&1; then
	nodes_kind=redis-server
	for a in "${addrs[@]}"; do
		mkdir -p "$work/node-${a##*:}"
		redis-server --port "${a##*:}" --bind 127.0.0.1 --save '' --appendonly no --dir "$work/node-${a##*:}" >"$work/node-${a##*:}.log" 2>&1 &
		node_pids+=($!)
	done
else
	nodes_kind="examples/mininodes (miniredis)"
	(cd "$repo" && $go build -o "$work/mininodes" ./examples/mininodes)
	"$work/mininodes" "${addrs[@]}" >"$work/mininodes.log" 2>&1 &
	node_pids+=($!)
fi
for a in "${addrs[@]}"; do
	for i in $(seq 100); do
		if (exec 3<>"/dev/tcp/127.0.0.1/${a##*:}") 2>/dev/null; then break; fi
		[ "$i" = 100 ] && { echo "consumer-check: node $a did not start ($nodes_kind)" >&2; exit 1; }
		sleep 0.1
	done
done
echo "consumer-check: nodes ${addrs[*]} ($nodes_kind)"

# The consumer's environment: this proxy first, then the real one; no
# checksum database for the modules it holds (they are not published);
# a module cache of its own, so that the downloads are counted; no
# workspace, no GOFLAGS from the caller.
export GOPROXY="file://$work/proxy,$real_proxy"
export GONOSUMDB=github.com/redlock-go
export GOMODCACHE="$work/modcache"
export GOWORK=off
unset GOFLAGS GOPRIVATE GONOPROXY

# readme_block PATH prints the Go code block of README.md right after the
# line <!-- program: PATH -->.
readme_block() {
	awk -v start="<!-- program: $1 -->" '
		$0 == start { on = 1; next }
		on && !code { if ($0 == "```go") { code = 1; next } exit }
		code && $0 == "```" { exit }
		code { print }
	' "$repo/README.md"
}

# consumer_start NAME MODULE: a fresh module that go gets MODULE@$version,
# from an empty module cache; its main.go must be written by the caller
# between consumer_start and consumer_build.
consumer_start() {
	dir="$work/$1"
	mkdir -p "$dir"
	cd "$dir"
	$go mod init example.com/consumer/"$1" >/dev/null 2>&1
	echo "consumer-check: $1: go get $2@$version"
	$go get "$2@$version"
}

# consumer_build NAME: tidy, build (as is and stripped), and report the
# downloads, sizes and linked modules; zips and mb are left set.
consumer_build() {
	$go mod tidy
	$go build -o "$dir/app" .
	$go build -ldflags='-s -w' -o "$dir/app-stripped" .
	zips=$(find "$GOMODCACHE/cache/download" -name '*.zip' | wc -l)
	mb=$(du -sm "$GOMODCACHE" | cut -f1)
	mods=$($go list -m all | wc -l)
	linked=$($go version -m "$dir/app" | awk '$1 == "dep" { printf "%s%s", sep, $2; sep = ", " }')
	awk -v n="$1" -v z="$zips" -v mb="$mb" -v m="$mods" -v s="$(stat -c %s "$dir/app")" -v ss="$(stat -c %s "$dir/app-stripped")" 'BEGIN {
		printf "consumer-check: %-10s downloads %d module zips, %d MB of module cache (%d modules in go list -m all)\n", n, z, mb, m
		printf "consumer-check: %-10s binary %.1f MB (%.1f MB stripped)\n", n, s / 1e6, ss / 1e6 }'
	echo "consumer-check: $1 links: ${linked:-the standard library only}"
}

# consumer_done: the next consumer starts from an empty cache too.
consumer_done() {
	$go clean -modcache
	cd "$work"
}

# 1. The README's program, run on the nodes.
program=$(readme_block examples/quickstart/main.go)
if ! grep -q '^package main$' <<<"$program"; then
	echo "consumer-check: README.md has no Go program (package main) right after <!-- program: examples/quickstart/main.go -->" >&2
	exit 1
fi
consumer_start quickstart github.com/redlock-go/redlock
printf '%s\n' "$program" >main.go
consumer_build quickstart
out=$("$dir/app" "${addrs[@]}" 2>&1) || { echo "consumer-check: the README's program failed on the nodes:" >&2; echo "$out" >&2; exit 1; }
grep -q '^holding invoice:42 with fence [1-9]' <<<"$out" || { echo "consumer-check: the README's program ran but did not take the lock:" >&2; echo "$out" >&2; exit 1; }
echo "consumer-check: quickstart ran: $(tr '\n' ';' <<<"$out")"
if [ "$zips" -gt "$max_zips" ]; then
	echo "consumer-check: a consumer of the library downloads $zips module zips, more than $max_zips: a new dependency of the root module (or of its packages' tests, which go mod tidy loads) reached every consumer" >&2
	exit 1
fi
said=$(sed -n 's/.*<!-- consumer-check: zips -->\([0-9]*\).*/\1/p' "$repo/README.md" | head -1)
if [ "$said" != "$zips" ]; then
	echo "consumer-check: README.md says a consumer downloads ${said:-(no <!-- consumer-check: zips -->N figure)} module zips; measured $zips: update the README's figure (and its MB, $mb)" >&2
	exit 1
fi
consumer_done

# 2. redlockotel, with its Example as the program.
consumer_start otel github.com/redlock-go/redlock/redlockotel
sed -e 's/^package redlockotel_test$/package main/' -e 's/^func Example() {$/func main() {/' \
	"$repo/redlockotel/example_test.go" >main.go
grep -q '^func main() {$' main.go || { echo "consumer-check: redlockotel/example_test.go has no func Example()" >&2; exit 1; }
consumer_build otel
"$dir/app" >/dev/null || { echo "consumer-check: redlockotel's Example failed as a program" >&2; exit 1; }
consumer_done
echo "consumer-check: ok"
