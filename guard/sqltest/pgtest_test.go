package sqltest_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"

	"github.com/redlock-go/redlock/redlocktest"
)

// A PostgreSQL server for tests: Debian's postgresql package, started by
// the test in a temporary directory on 127.0.0.1 and removed when the test
// ends. `make postgres` installs the package.

// pgGlob finds the server binaries of Debian's postgresql packages.
const pgGlob = "/usr/lib/postgresql/*/bin"

// pgBinDir returns the bin directory of the newest PostgreSQL installed.
func pgBinDir(t testing.TB) string {
	t.Helper()
	dirs, _ := filepath.Glob(pgGlob)
	var found []string
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			found = append(found, d)
		}
	}
	if len(found) == 0 {
		if os.Getenv(redlocktest.CIEnv) != "" {
			t.Fatalf("redlock: PostgreSQL server binaries not found in %s, and %s is set: run `make postgres` (apt-get install -y postgresql)", pgGlob, redlocktest.CIEnv)
		}
		t.Skipf("needs a PostgreSQL server (binaries in %s); run make postgres (apt-get install -y postgresql), or make test", pgGlob)
	}
	version := func(d string) int {
		v, _ := strconv.Atoi(filepath.Base(filepath.Dir(d)))
		return v
	}
	sort.Slice(found, func(i, j int) bool { return version(found[i]) > version(found[j]) })
	return found[0]
}

// pgCredential returns the credential to run the server with: the postgres
// user's when running as root (PostgreSQL refuses to run as root), nil
// (this process's user) otherwise.
func pgCredential(t testing.TB) *syscall.Credential {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		t.Fatalf("redlock: running as root and there is no postgres user to run PostgreSQL as (%v): run `make postgres`", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		t.Fatalf("redlock: user postgres: %v", err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
}

// startPostgres starts a PostgreSQL server in a new temporary directory,
// creates a database in it and returns a handle to that database. The
// server is stopped and the directory removed when the test ends; if the
// test binary dies first, the kernel stops the server (Pdeathsig).
func startPostgres(t testing.TB) *sql.DB {
	t.Helper()
	bin := pgBinDir(t)
	cred := pgCredential(t)

	removeDeadPgDirs()
	dir, err := os.MkdirTemp("", pgDirPrefix)
	if err != nil {
		t.Fatalf("redlock: temp dir for PostgreSQL: %v", err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("removing PostgreSQL dir: %v", err)
		}
	})
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatalf("redlock: chown %s to postgres: %v", dir, err)
		}
	}
	data := filepath.Join(dir, "data")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	initdb := pgCommand(ctx, dir, cred, filepath.Join(bin, "initdb"),
		"-D", data, "-U", "postgres", "--auth=trust", "--encoding=UTF8",
		"--no-locale", "--no-sync", "--no-instructions")
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("redlock: initdb: %v\n%s", err, out)
	}

	// A free port can be taken by someone else before the server binds it:
	// try a few.
	var srv *pgServer
	for attempt := 1; ; attempt++ {
		srv, err = startPgServer(ctx, dir, data, bin, cred)
		if err == nil {
			break
		}
		if !errors.Is(err, errPgPortTaken) || attempt == 3 {
			t.Fatalf("redlock: starting PostgreSQL: %v", err)
		}
	}
	t.Cleanup(func() {
		if err := srv.stop(); err != nil {
			t.Errorf("stopping PostgreSQL: %v", err)
		}
	})

	admin, err := sql.Open("pgx", srv.dsn("postgres"))
	if err != nil {
		t.Fatalf("redlock: %v", err)
	}
	_, err = admin.ExecContext(ctx, "CREATE DATABASE redlock_test")
	admin.Close()
	if err != nil {
		t.Fatalf("redlock: CREATE DATABASE: %v", err)
	}
	db, err := sql.Open("pgx", srv.dsn("redlock_test"))
	if err != nil {
		t.Fatalf("redlock: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

const pgDirPrefix = "redlock-pg-"

// removeDeadPgDirs removes the directories of servers whose test binary
// died without cleaning up (the kernel stopped the server: see Pdeathsig):
// those older than a minute (not a server still starting) with no live
// postmaster.
func removeDeadPgDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), pgDirPrefix+"*"))
	for _, d := range dirs {
		fi, err := os.Stat(d)
		if err != nil || time.Since(fi.ModTime()) < time.Minute {
			continue
		}
		if b, err := os.ReadFile(filepath.Join(d, "data", "postmaster.pid")); err == nil {
			line, _, _ := strings.Cut(string(b), "\n")
			if pid, err := strconv.Atoi(line); err == nil && syscall.Kill(pid, 0) != syscall.ESRCH {
				continue // running
			}
		}
		os.RemoveAll(d)
	}
}

// pgCommand is a command run as cred (nil: as this process) in dir, with a
// small fixed environment.
func pgCommand(ctx context.Context, dir string, cred *syscall.Credential, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C", "TZ=UTC"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	return cmd
}

// pgServer is a running postgres process.
type pgServer struct {
	cmd    *exec.Cmd
	port   int
	log    string        // path of the server's log
	exited chan struct{} // closed when cmd has exited (the Wait goroutine's end)
}

var errPgPortTaken = errors.New("port taken")

// startPgServer starts postgres on data, listening on a free port of
// 127.0.0.1 and on a Unix socket in dir, and waits until it accepts
// connections. The error matches errPgPortTaken if the port was taken.
func startPgServer(ctx context.Context, dir, data, bin string, cred *syscall.Credential) (*pgServer, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()

	logPath := filepath.Join(dir, fmt.Sprintf("postgres-%d.log", port))
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child has its own copy
	// Not CommandContext: the server must outlive ctx (setup only).
	cmd := pgCommand(context.Background(), dir, cred, filepath.Join(bin, "postgres"),
		"-D", data, "-k", dir, "-p", strconv.Itoa(port), "-h", "127.0.0.1",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// If this process dies without stopping the server, the kernel sends
	// the server SIGQUIT (immediate shutdown).
	cmd.SysProcAttr.Pdeathsig = syscall.SIGQUIT
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &pgServer{cmd: cmd, port: port, log: logPath, exited: make(chan struct{})}
	go func() {
		defer close(s.exited)
		cmd.Wait()
	}()

	probe, err := sql.Open("pgx", s.dsn("postgres"))
	if err != nil {
		s.stop()
		return nil, err
	}
	defer probe.Close()
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		err := probe.PingContext(pctx)
		cancel()
		if err == nil {
			return s, nil
		}
		select {
		case <-s.exited:
			tail := s.logTail()
			if strings.Contains(tail, "could not bind") || strings.Contains(tail, "already in use") {
				return nil, fmt.Errorf("%w: %d: %s", errPgPortTaken, port, tail)
			}
			return nil, fmt.Errorf("postgres exited (%v); log:\n%s", cmd.ProcessState, tail)
		case <-ctx.Done():
			s.stop()
			return nil, fmt.Errorf("postgres not ready: %v (last ping: %v); log:\n%s", ctx.Err(), err, s.logTail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (s *pgServer) dsn(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, db)
}

// logTail returns the last lines of the server's log.
func (s *pgServer) logTail() string {
	b, _ := os.ReadFile(s.log)
	if i := len(b) - 2000; i > 0 {
		b = b[i:]
		b = b[bytes.IndexByte(b, '\n')+1:]
	}
	return string(b)
}

// stop shuts the server down (fast shutdown: clients are disconnected) and
// waits for it to exit, killing it after 15s.
func (s *pgServer) stop() error {
	select {
	case <-s.exited:
		return nil
	default:
	}
	s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.exited:
		return nil
	case <-time.After(15 * time.Second):
	}
	s.cmd.Process.Kill()
	<-s.exited
	return fmt.Errorf("postgres did not shut down within 15s; killed it; log:\n%s", s.logTail())
}
