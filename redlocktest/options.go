package redlocktest

import (
	"fmt"
	"os"
	"time"

	"github.com/ory/dockertest/v3"
	"github.com/redlock-go/redlock/redlocktest/history"
)

const (
	// DefaultImage is the image used when neither Options.Image nor the
	// REDLOCK_REDIS_IMAGE environment variable is set.
	DefaultImage = "redis:7"

	// DefaultExpire is the container lifetime used when Options.Expire is
	// zero.
	DefaultExpire = 30 * time.Minute

	// ImageEnv is the environment variable that overrides DefaultImage.
	ImageEnv = "REDLOCK_REDIS_IMAGE"
)

// Options configures New. A nil *Options means defaults; so does the zero
// value of every field.
type Options struct {
	// Image is the Redis image, "repository[:tag]" (tag defaults to
	// "latest"). It must be present locally; it is never pulled.
	// Default: $REDLOCK_REDIS_IMAGE, else "redis:7". The image must accept
	// redis-server options as its command, as both the official image and
	// the one built by scripts/redis-image.sh do.
	Image string

	// NoPersistence, if true, runs the nodes without any persistence
	// (--appendonly no --save ""), so a restarted node comes back empty.
	// Default false: nodes run with --appendonly yes --appendfsync always,
	// so every acknowledged write (fencing counters in particular) survives
	// Stop, Kill and Restart.
	NoPersistence bool

	// Recorder, if set, records every fault of the Cluster and of its Nets
	// as it begins and ends: a history.Fault and a history.Heal event with
	// the fault's kind (history.FaultKill ... history.FaultHold), for the
	// checker's report and the timeline's fault lanes.
	Recorder *history.Recorder

	// Args are extra redis-server arguments, such as
	// []string{"--maxmemory", "64mb"}. They come after the arguments
	// redlocktest sets (--protected-mode no and the persistence options),
	// so they can override them.
	Args []string

	// Expire bounds the lifetime of the containers, counted from New:
	// Docker kills them after this long even if the test process died
	// without calling Close. It is rounded up to whole seconds and is not
	// extended by Restart. Default 30m; negative is an error.
	Expire time.Duration
}

// prepare fills in opts' defaults (nil: all of them), checks that Docker
// answers, makes sure the image is there (building it if need be) and
// removes containers of earlier runs past their expiry: what New and the
// deployments (TLS, Sentinel, Redis Cluster) do first.
func prepare(opts *Options) (o Options, pool *dockertest.Pool, repo, tag string, err error) {
	if opts != nil {
		o = *opts
	}
	if o.Image == "" {
		o.Image = os.Getenv(ImageEnv)
	}
	if o.Image == "" {
		o.Image = DefaultImage
	}
	switch {
	case o.Expire == 0:
		o.Expire = DefaultExpire
	case o.Expire < 0:
		return o, nil, "", "", fmt.Errorf("redlocktest: negative Options.Expire %v", o.Expire)
	}
	repo, tag, err = splitImage(o.Image)
	if err != nil {
		return o, nil, "", "", err
	}
	pool, err = dockerPool()
	if err != nil {
		return o, nil, "", "", err
	}
	pool.MaxWait = readyWait
	ref := repo + ":" + tag
	if err := ensureImage(pool, ref); err != nil {
		return o, nil, "", "", err
	}
	reapExpired(pool)
	return o, pool, repo, tag, nil
}
