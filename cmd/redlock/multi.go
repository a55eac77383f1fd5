package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/redlock-go/redlock"
)

// namesFlag is -m: more lock names for run to hold with NAME, all or
// nothing (repeatable).
type namesFlag []string

func (n *namesFlag) String() string { return strings.Join(*n, ",") }

func (n *namesFlag) Set(s string) error {
	if s == "" {
		return fmt.Errorf("want a lock name")
	}
	*n = append(*n, s)
	return nil
}

// setHolder is what run holds with -m: the set of NAME and every -m NAME
// (redlock.Client.AcquireMulti). Its Fence is its first name's (sorted);
// the command gets every name's.
type setHolder struct{ *redlock.MultiLock }

func (s setHolder) Fence() uint64 { return s.Fences()[0] }

var _ holder = setHolder{}

// acquireSet takes name and o.also at once.
func acquireSet(ctx context.Context, c *redlock.Client, o *runOptions, name string, opts *redlock.AcquireOptions) (holder, error) {
	so := *opts
	so.Metadata = "" // a set keeps none
	m, err := c.AcquireMulti(ctx, append([]string{name}, o.also...), o.ttl, &so)
	if err != nil {
		return nil, err
	}
	return setHolder{m}, nil
}

// setEnv is the command's variables for a set: REDLOCK_NAMES (sorted,
// comma-separated), REDLOCK_FENCES ("name=fence" comma-separated) and
// REDLOCK_FENCE_<i>, i from 0 in the same order.
func setEnv(s setHolder) []string {
	names, fences := s.Names(), s.Fences()
	pairs := make([]string, len(names))
	env := []string{"REDLOCK_NAMES=" + strings.Join(names, ",")}
	for i, n := range names {
		f := strconv.FormatUint(fences[i], 10)
		pairs[i] = n + "=" + f
		env = append(env, "REDLOCK_FENCE_"+strconv.Itoa(i)+"="+f)
	}
	return append(env, "REDLOCK_FENCES="+strings.Join(pairs, ","))
}

// checkAlso says what is wrong with -m, if anything.
func checkAlso(o *runOptions, name string) error {
	switch {
	case len(o.also) == 0:
		return nil
	case o.limit > 1:
		return usagef("run", "redlock: run: -m and -n %d: a set of locks is not a semaphore; give one of them", o.limit)
	case o.shared:
		return usagef("run", "redlock: run: -m and --shared: a set of locks is taken exclusively; give one of them")
	case slices.Contains(o.also, name):
		return usagef("run", "redlock: run: -m %s: NAME %q is held already; give each name once", name, name)
	case len(o.also)+1 > redlock.MaxSetNames:
		return usagef("run", "redlock: run: %d names: at most %d at once", len(o.also)+1, redlock.MaxSetNames)
	}
	return nil
}
