#!/usr/bin/env bash
# redis-image.sh makes sure the Redis Docker image used by the tests
# (redlocktest, docker-compose.yml) exists locally.
#
# The image name is $REDLOCK_REDIS_IMAGE (default redis:7). If the image is
# already present nothing happens. Otherwise the script tries `docker pull`
# (bounded to 60s), and if that fails (no registry reachable) it builds a
# minimal FROM-scratch image around the host's redis-server binary,
# installing redis-server with apt-get first if needed. The built image has
# ENTRYPOINT redis-server, so `docker run IMAGE --appendonly yes` works the
# same way as with the official image.
#
# It prints exactly one line describing what it did. Safe to run repeatedly.
set -euo pipefail

IMAGE="${REDLOCK_REDIS_IMAGE:-redis:7}"
say() { echo "redis-image: $*"; }

if docker image inspect "$IMAGE" >/dev/null 2>&1; then
	say "$IMAGE already present, nothing to do"
	exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
log="$work/log"

# Quiet by default; the log is shown only when a step fails.
run() {
	if ! "$@" >>"$log" 2>&1; then
		echo "redis-image: command failed: $*" >&2
		cat "$log" >&2
		exit 1
	fi
}

if timeout 60 docker pull -q "$IMAGE" >>"$log" 2>&1; then
	say "pulled $IMAGE"
	exit 0
fi

if ! command -v redis-server >/dev/null 2>&1; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "redis-image: redis-server is not installed and $IMAGE cannot be pulled; install redis-server (needs root) and rerun" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	run apt-get update
	run apt-get install -y --no-install-recommends redis-server
	# Debian starts the packaged service; we only want the binary.
	if command -v systemctl >/dev/null 2>&1; then
		systemctl disable --now redis-server >/dev/null 2>&1 || true
	fi
fi

# On Debian /usr/bin/redis-server is a symlink to redis-check-rdb; Redis
# chooses its mode from argv[0], hence the copy under the name redis-server.
bin="$(readlink -f "$(command -v redis-server)")"
ctx="$work/ctx"
root="$ctx/rootfs"
mkdir -p "$root/usr/local/bin" "$root/data" "$root/tmp"
chmod 0755 "$root/data"
chmod 1777 "$root/tmp"
cp -L "$bin" "$root/usr/local/bin/redis-server"

# Every absolute path ldd prints (shared libraries, among them libssl and
# libcrypto for --tls-port, and the dynamic loader), copied with symlinks
# resolved to the same path inside the image.
libs="$(ldd "$bin" | grep -o '/[^ ]*' || true)"
if [ -z "$libs" ]; then
	echo "redis-image: ldd found no libraries for $bin" >&2
	exit 1
fi
for lib in $libs; do
	mkdir -p "$root$(dirname "$lib")"
	cp -L "$lib" "$root$lib"
done
# Make sure the loader named in the ELF header is there even if ldd printed
# a different spelling of it.
interp=/lib64/ld-linux-x86-64.so.2
if [ -e "$interp" ] && [ ! -e "$root$interp" ]; then
	mkdir -p "$root/lib64"
	cp -L "$interp" "$root$interp"
fi

version="$("$root/usr/local/bin/redis-server" --version | grep -o 'v=[^ ]*' | cut -d= -f2 || true)"

cat >"$ctx/Dockerfile" <<DOCKERFILE
FROM scratch
LABEL org.opencontainers.image.description="redis-server ${version} built by scripts/redis-image.sh from the host binary"
COPY rootfs/ /
WORKDIR /data
EXPOSE 6379
ENTRYPOINT ["/usr/local/bin/redis-server"]
CMD ["--bind","0.0.0.0","--protected-mode","no"]
DOCKERFILE

run docker build -q -t "$IMAGE" "$ctx"
say "built $IMAGE FROM scratch from $bin (redis ${version:-unknown}) because it could not be pulled"
