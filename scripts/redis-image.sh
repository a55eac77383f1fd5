#!/usr/bin/env bash
# redis-image.sh makes sure the Redis Docker image used by the tests exists
# locally: pulled, else built FROM scratch around the host's redis-server.
# The script lives in redlocktest/, which embeds it and runs it itself when
# a test finds the image missing; this is the entry point for make.
exec bash "$(dirname "$0")/../redlocktest/redis-image.sh" "$@"
