package redlocktest

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"
)

// This file holds what the deployment shapes (TLS nodes, a Sentinel set, a
// Redis Cluster) share: a Docker pool made the way New makes it, and one
// redis-server container that can be given files before it starts and is
// reachable on the Docker bridge network and, if asked, on a published
// port of 127.0.0.1.

// deployment is the Docker side of one deployment shape: its pool, image,
// options and the containers it started, removed together by close.
type deployment struct {
	pool     *dockertest.Pool
	image    string // "repository:tag"
	args     []string
	deadline time.Time
	prefix   string // container names

	mu      sync.Mutex // protects servers
	servers []*server
	exp     *Cluster // only its expiry timers (arm): Docker kills the containers at deadline
}

// newDeployment checks Docker and the image as New does. opts may be nil;
// its Image, NoPersistence, Args and Expire apply.
func newDeployment(kind string, opts *Options) (*deployment, error) {
	o, pool, repo, tag, err := prepare(opts)
	if err != nil {
		return nil, err
	}
	ref := repo + ":" + tag
	args := []string{"--protected-mode", "no"}
	if o.NoPersistence {
		args = append(args, "--appendonly", "no", "--save", "")
	} else {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	}
	deadline := time.Now().Add(o.Expire)
	exp := &Cluster{pool: pool, deadline: deadline}
	exp.expCtx, exp.stopExp = context.WithCancel(context.Background())
	return &deployment{
		pool:     pool,
		image:    ref,
		args:     append(args, o.Args...),
		deadline: deadline,
		prefix:   "redlocktest-" + kind + "-" + randomHex(4),
		exp:      exp,
	}, nil
}

// server is one redis-server container of a deployment.
type server struct {
	name string
	id   string
	ip   string // on the Docker bridge network, reachable from the host on Linux
	host string // "127.0.0.1:PORT" of the published port, if any
}

// serverSpec says how to start a server.
type serverSpec struct {
	args    []string          // redis-server arguments (the first may be a config file)
	files   map[string][]byte // absolute path in the container -> content, written before start
	publish string            // container port to publish on 127.0.0.1, e.g. "6380/tcp"; "" for none
}

// start creates the container of spec, copies its files in, starts it and
// learns its addresses. It does not wait for the server to answer. A
// container it created is removed by close, even when start fails. It is
// safe for concurrent use.
func (d *deployment) start(spec serverSpec) (*server, error) {
	s := &server{name: d.prefix + "-" + randomHex(3)}
	ctx, cancel := context.WithTimeout(context.Background(), dockerTimeout)
	defer cancel()
	cfg := &dc.Config{
		Image:      d.image,
		Cmd:        spec.args,
		StopSignal: "SIGWINCH", // ignored by redis-server: the expiry timer's stop waits, then kills
		Labels: map[string]string{
			labelKey:    "1",
			labelExpiry: strconv.FormatInt(d.deadline.Unix(), 10),
			labelPID:    strconv.Itoa(os.Getpid()),
		},
	}
	hc := &dc.HostConfig{RestartPolicy: dc.NeverRestart()}
	if spec.publish != "" {
		p := dc.Port(spec.publish)
		cfg.ExposedPorts = map[dc.Port]struct{}{p: {}}
		hc.PortBindings = map[dc.Port][]dc.PortBinding{p: {{HostIP: "127.0.0.1", HostPort: "0"}}}
	}
	ctr, err := d.pool.Client.CreateContainer(dc.CreateContainerOptions{Name: s.name, Config: cfg, HostConfig: hc, Context: ctx})
	if err != nil {
		return nil, fmt.Errorf("redlocktest: creating container %s: %w", s.name, err)
	}
	s.id = ctr.ID
	d.mu.Lock()
	d.servers = append(d.servers, s) // removed by close from now on
	d.mu.Unlock()
	if len(spec.files) > 0 {
		archive, err := tarOf(spec.files)
		if err != nil {
			return nil, err
		}
		if err := d.pool.Client.UploadToContainer(s.id, dc.UploadToContainerOptions{InputStream: archive, Path: "/", Context: ctx}); err != nil {
			return nil, fmt.Errorf("redlocktest: copying files into %s: %w", s.name, err)
		}
	}
	if err := d.pool.Client.StartContainerWithContext(s.id, nil, ctx); err != nil {
		return nil, fmt.Errorf("redlocktest: starting container %s: %w", s.name, err)
	}
	d.exp.arm(s.id)
	info, err := d.pool.Client.InspectContainerWithContext(s.id, ctx)
	if err != nil {
		return nil, fmt.Errorf("redlocktest: inspecting container %s: %w", s.name, err)
	}
	s.ip = info.NetworkSettings.IPAddress
	if s.ip == "" {
		return nil, fmt.Errorf("redlocktest: container %s has no address on the Docker bridge network", s.name)
	}
	if spec.publish != "" {
		b := info.NetworkSettings.Ports[dc.Port(spec.publish)]
		if len(b) == 0 {
			return nil, fmt.Errorf("redlocktest: container %s: port %s was not published", s.name, spec.publish)
		}
		s.host = net.JoinHostPort("127.0.0.1", b[0].HostPort)
	}
	return s, nil
}

// pinger is what waitReady needs of a client: a PING that reports its
// error (sentinel clients are not UniversalClients).
type pinger func(ctx context.Context) error

// waitReady calls ping until it answers, giving up early with the
// container's log if the container has exited.
func (d *deployment) waitReady(s *server, ping pinger) error {
	return waitPinged(d.pool, s.id, "container "+s.name, ping)
}

// close force-removes every container of the deployment with its volumes.
func (d *deployment) close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	for _, s := range d.servers {
		ctx, cancel := context.WithTimeout(context.Background(), dockerTimeout)
		err := d.pool.Client.RemoveContainer(dc.RemoveContainerOptions{ID: s.id, Force: true, RemoveVolumes: true, Context: ctx})
		cancel()
		var noSuch *dc.NoSuchContainer
		if err != nil && !errors.As(err, &noSuch) {
			errs = append(errs, fmt.Errorf("redlocktest: removing container %s: %w", s.name, err))
		}
	}
	d.servers = nil
	d.exp.stopExp()
	d.exp.expWG.Wait()
	return errors.Join(errs...)
}

// tarOf packs files (absolute paths) into a tar archive, readable by all.
func tarOf(files map[string][]byte) (*bytes.Buffer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	dirs := map[string]bool{}
	for _, p := range paths {
		for dir := parentDir(p); dir != "" && !dirs[dir]; dir = parentDir(dir) {
			dirs[dir] = true
		}
	}
	dirList := make([]string, 0, len(dirs))
	for dir := range dirs {
		dirList = append(dirList, dir)
	}
	sort.Strings(dirList) // parents first
	for _, dir := range dirList {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir[1:] + "/", Mode: 0o755}); err != nil {
			return nil, err
		}
	}
	for _, p := range paths {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: p[1:], Mode: 0o644, Size: int64(len(files[p]))}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(files[p]); err != nil {
			return nil, err
		}
	}
	return &buf, tw.Close()
}

// parentDir is the parent of an absolute path, "" for "/" and top level
// entries' parent.
func parentDir(p string) string {
	for i := len(p) - 1; i > 0; i-- {
		if p[i] == '/' {
			return p[:i]
		}
	}
	return ""
}
