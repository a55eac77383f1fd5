#!/usr/bin/env bash
# consumer-check: fetch this working tree's modules as a user would, before
# they are tagged. scripts/modproxy writes a file-based module proxy holding
# the root module and redlockotel at $CONSUMER_VERSION; a fresh module in a
# temporary directory, with a module cache of its own, goes gets each from
# it (everything else from the real proxy), compiles the README's usage
# example (between <!-- consumer-check: usage --> and <!-- /consumer-check -->)
# or redlockotel's Example, runs go mod tidy and go build, and prints what
# the consumer downloaded. It fails if a go get, the tidy or a build fails.
#
#   scripts/consumer-check.sh            # this working tree
#   CONSUMER_REPO=DIR scripts/consumer-check.sh   # another checkout (its modules, its README)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "${CONSUMER_REPO:-$here/..}" && pwd)
version=${CONSUMER_VERSION:-v0.1.0}
go=${GO:-go}
real_proxy=$($go env GOPROXY)

work=$(mktemp -d "${TMPDIR:-/tmp}/redlock-consumer.XXXXXX")
cleanup() {
	# The module cache is read-only; go clean -modcache removes it.
	GOMODCACHE="$work/modcache" GOFLAGS= $go clean -modcache >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

echo "consumer-check: proxy of $repo at $version"
(cd "$here/modproxy" && $go run . -out "$work/proxy" -version "$version" "$repo" "$repo/redlockotel")

# The consumer's environment: this proxy first, then the real one; no
# checksum database for the modules it holds (they are not published);
# a module cache of its own, so that the downloads are counted; no
# workspace, no GOFLAGS from the caller.
export GOPROXY="file://$work/proxy,$real_proxy"
export GONOSUMDB=github.com/redlock-go
export GOMODCACHE="$work/modcache"
export GOWORK=off
unset GOFLAGS GOPRIVATE GONOPROXY

# readme_block NAME prints the Go code block of README.md between
# <!-- consumer-check: NAME --> and <!-- /consumer-check -->.
readme_block() {
	awk -v start="<!-- consumer-check: $1 -->" '
		index($0, start) == 1 { on = 1; next }
		on && index($0, "<!-- /consumer-check -->") == 1 { exit }
		on && /^```/ { if (code) exit; code = 1; next }
		on && code { print }
	' "$repo/README.md"
}

# consumer NAME MODULE: a fresh module that go gets MODULE@$version; its
# main.go must be written by the caller between consumer_start and
# consumer_build.
consumer_start() {
	dir="$work/$1"
	mkdir -p "$dir"
	cd "$dir"
	$go mod init example.com/consumer/"$1" >/dev/null 2>&1
	echo "consumer-check: $1: go get $2@$version"
	$go get "$2@$version"
}

consumer_build() {
	$go mod tidy
	$go build -o "$dir/app" .
	zips=$(find "$GOMODCACHE/cache/download" -name '*.zip' | wc -l)
	mods=$($go list -m all | wc -l)
	size=$(stat -c %s "$dir/app")
	awk -v n="$1" -v z="$zips" -v m="$mods" -v s="$size" 'BEGIN {
		printf "consumer-check: %-6s module zips downloaded %3d, modules listed %3d, binary %d bytes (%.1f MB)\n", n, z, m, s, s / 1e6 }'
	# The next consumer starts from an empty cache too.
	$go clean -modcache
	cd "$work"
}

# 1. The library alone, with the README's usage example.
usage=$(readme_block usage)
if [ -z "$usage" ]; then
	echo "consumer-check: README.md has no Go block between <!-- consumer-check: usage --> and <!-- /consumer-check -->" >&2
	exit 1
fi
consumer_start usage github.com/redlock-go/redlock
if [[ "$usage" == package* ]]; then
	printf '%s\n' "$usage" >main.go
else
	# A fragment: it runs in a function given ctx, a store with fenced
	# writes and a resource; the imports it may use are kept in use.
	cat >main.go <<GO
package main

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redlock-go/redlock"
)

var (
	_ = time.Second
	_ redis.UniversalClient
	_ = redlock.New
)

type store interface {
	Write(ctx context.Context, resource string, fence uint64) error
}

func example(ctx context.Context, store store, invoice string) error {
$usage
	return err
}

func main() { _ = example }
GO
fi
consumer_build usage

# 2. redlockotel, with its Example as the program.
consumer_start otel github.com/redlock-go/redlock/redlockotel
sed -e 's/^package redlockotel_test$/package main/' -e 's/^func Example() {$/func main() {/' \
	"$repo/redlockotel/example_test.go" >main.go
grep -q '^func main() {$' main.go || { echo "consumer-check: redlockotel/example_test.go has no func Example()" >&2; exit 1; }
consumer_build otel
