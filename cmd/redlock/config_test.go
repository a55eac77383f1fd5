package main

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestNodeURLParsing(t *testing.T) {
	tests := []struct {
		url         string
		addr        string // in node.addr
		dialTimeout time.Duration
		maxRetries  int
		wantErr     string
	}{
		{url: "h1:6379", addr: "h1:6379", dialTimeout: time.Second, maxRetries: 1},
		{url: "redis://h1:6379/2", addr: "h1:6379", dialTimeout: time.Second, maxRetries: 1},
		{url: "redis://h1:6379?dial_timeout=3s&max_retries=4", addr: "h1:6379", dialTimeout: 3 * time.Second, maxRetries: 4},
		{url: "redis+sentinel://s1:26379?master_name=mymaster&addr=s2:26379&dial_timeout=2s", addr: "sentinel s1:26379,s2:26379 master mymaster", dialTimeout: 2 * time.Second, maxRetries: 1},
		{url: "redis+sentinel://s1:26379?master_name=m&max_retries=5", addr: "master m", dialTimeout: time.Second, maxRetries: 5},
		{url: "redis+cluster://c1:7000?addr=c2:7001&max_retries=3", addr: "cluster c1:7000,c2:7001", dialTimeout: time.Second, maxRetries: 3},
		{url: "rediss+cluster://c1:7000?dial_timeout=5s", addr: "cluster c1:7000", dialTimeout: 5 * time.Second, maxRetries: 1},
		{url: "h1", addr: "h1:6379", dialTimeout: time.Second, maxRetries: 1},
		{url: "redis://u:p@h1:6379/15", addr: "h1:6379", dialTimeout: time.Second, maxRetries: 1},
		{url: "rediss://h1:6380/", addr: "h1:6380", dialTimeout: time.Second, maxRetries: 1},
		{url: "[::1]:6379", addr: "[::1]:6379", dialTimeout: time.Second, maxRetries: 1},
		{url: "redis://[fe80::1%25eth0]:6379", addr: "[fe80::1%eth0]:6379", dialTimeout: time.Second, maxRetries: 1},
		{url: "redis_1.local:65535", addr: "redis_1.local:65535", dialTimeout: time.Second, maxRetries: 1},
		{url: "redis+cluster://c1:7000/?addr=[::1]:7001", addr: "cluster c1:7000,[::1]:7001", dialTimeout: time.Second, maxRetries: 1},
		{url: "redis+sentinel://s1:26379", wantErr: "master_name"},
		{url: "redis+raft://h:1", wantErr: "unknown scheme"},
		{url: "http://h:1", wantErr: "unknown scheme"},
		{url: "redis://h:1?bogus=1", wantErr: "unexpected option: bogus"},
		{url: "redis://h:1#frag", wantErr: "do not parse"},
		{url: "redis://", wantErr: "host is missing"},
		{url: "redis://:6379", wantErr: "host is missing"},
		{url: "rediss://u:p@", wantErr: "host is missing"},
		{url: "::::", wantErr: `host ":::" is not a host name`},
		{url: "::1", wantErr: "an IPv6 address goes in brackets"},
		{url: "redis:h:1", wantErr: `host "redis:h" is not a host name`},
		{url: "h_1!:1", wantErr: "characters a host name cannot have"},
		{url: "h:0", wantErr: "port 0 is not in 1..65535"},
		{url: "h:65536", wantErr: "port 65536 is not in 1..65535"},
		{url: "h:", wantErr: "port after ':' is empty"},
		{url: "redis://h:1/x", wantErr: "not a database number"},
		{url: "redis://h:1/1/2", wantErr: "not a database number"},
		{url: "redis://h:1/-1", wantErr: "not a database number"},
		{url: "redis+sentinel://s1:26379/x?master_name=m", wantErr: "not a database number"},
		{url: "redis+cluster://c1:7000/0", wantErr: "only database 0"},
		{url: "redis+sentinel://:26379?master_name=m", wantErr: "host is missing"},
		{url: "redis+sentinel://s1:26379?master_name=m&addr=s2", wantErr: "unable to parse addr param"},
		{url: "redis+cluster://c1:7000?addr=:7001", wantErr: "addr=:7001: the host is missing"},
		{url: "redis+cluster://c1:7000?addr=c2:99999", wantErr: "port 99999 is not in 1..65535"},
		{url: "redis+cluster://c1:7000?addr=c2:%2B1", wantErr: "port +1 is not in 1..65535"},
		{url: "unix:///tmp/redis.sock", wantErr: `unknown scheme "unix"`},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			n, err := parseNode(tt.url, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("parseNode(%q) = %v; want an error containing %q", tt.url, err, tt.wantErr)
				}
				if err == nil {
					n.client.Close()
				}
				return
			}
			if err != nil {
				t.Fatalf("parseNode(%q) = %v; want a node", tt.url, err)
			}
			defer n.client.Close()
			if !strings.Contains(n.addr, tt.addr) {
				t.Errorf("parseNode(%q).addr = %q; want it to contain %q", tt.url, n.addr, tt.addr)
			}
			var dial time.Duration
			var retries int
			switch c := n.client.(type) {
			case *redis.Client:
				dial, retries = c.Options().DialTimeout, c.Options().MaxRetries
			case *redis.ClusterClient:
				dial, retries = c.Options().DialTimeout, c.Options().MaxRetries
			default:
				t.Fatalf("parseNode(%q) client is a %T", tt.url, c)
			}
			if dial != tt.dialTimeout || retries != tt.maxRetries {
				t.Errorf("parseNode(%q): dial timeout %v, max retries %d; want %v, %d", tt.url, dial, retries, tt.dialTimeout, tt.maxRetries)
			}
		})
	}
}

func TestSplitNodes(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{"a:1,b:2,c:3", []string{"a:1", "b:2", "c:3"}, false},
		{"redis://a:1 redis://b:2\n\tredis://c:3", []string{"redis://a:1", "redis://b:2", "redis://c:3"}, false},
		{"redis://a:1, redis://b:2", []string{"redis://a:1", "redis://b:2"}, false},
		{" a:1 ,b:2\t, c:3\n", []string{"a:1", "b:2", "c:3"}, false},
		{"", nil, false},
		{"redis://a:1, redis://b:2,", nil, true},
		{"a:1,,b:2", nil, true},
		{"a:1, ,b:2", nil, true},
		{",a:1", nil, true},
		{",", nil, true},
		{"redis://u:p%2Cw%40x@a:1,rediss://b:2,c:3", []string{"redis://u:p%2Cw%40x@a:1", "rediss://b:2", "c:3"}, false},
		{"redis+sentinel://s:1?master_name=m&addr=s2:2,redis://b:2", []string{"redis+sentinel://s:1?master_name=m&addr=s2:2", "redis://b:2"}, false},
		{"redis://u:pa,ss@a:1,redis://b:2", nil, true},
		{"redis://u:a,b,c@a:1", nil, true},
		{"redis+sentinel://s:1?master_name=m&password=a,b", nil, true},
		{"redis://u:a,,b@a:1", nil, true},
	}
	for _, tt := range tests {
		got, err := splitNodes(tt.in)
		if (err != nil) != tt.wantErr || strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("splitNodes(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
		if err != nil && (strings.Contains(err.Error(), "u:") || strings.Contains(err.Error(), "@") || strings.Contains(err.Error(), "password=")) {
			t.Errorf("splitNodes(%q) error %q shows part of the list", tt.in, err)
		}
	}
}

// secret is a password with every character that can break a URL; each
// SECRETn piece must never appear in a message.
const secret = "pw,SECRET1/SECRET2#SECRET3?SECRET4@SECRET5%SECRET6"

// encodedURL is a node URL with secret percent-encoded as the help says
// (url.QueryEscape does it; url.UserPassword would leave the comma raw).
func encodedURL(user, host string) string {
	return "redis://" + user + ":" + url.QueryEscape(secret) + "@" + host
}

func TestRunCredentialsNeverShown(t *testing.T) {
	raw := func(host string) string { return "redis://lockuser:" + secret + "@" + host }
	enc := func(host string) string { return encodedURL("lockuser", host) }
	tests := []struct {
		name  string
		nodes string
		code  int
	}{
		{"raw password in one URL", raw("127.0.0.1:1"), exitUsage},
		{"raw password in a list", raw("127.0.0.1:1") + "," + raw("127.0.0.1:2"), exitUsage},
		{"raw password, space separated", raw("127.0.0.1:1") + " " + raw("127.0.0.1:2"), exitUsage},
		{"sentinel password option", "redis+sentinel://127.0.0.1:1?master_name=m&password=" + secret, exitUsage},
		{"encoded, node down", enc("127.0.0.1:1"), exitUnavailable},
		{"encoded, bad db", enc("127.0.0.1:1") + "/x", exitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, via := range []string{"flag", "env"} {
				args := []string{"run", "--wait", "0", lockName(t), "--", "true"}
				t.Setenv(nodesEnv, "")
				if via == "flag" {
					args = append([]string{"run", "--nodes", tt.nodes}, args[1:]...)
				} else {
					t.Setenv(nodesEnv, tt.nodes)
				}
				code, stdout, stderr := runCLI(t, args...)
				if code != tt.code {
					t.Errorf("via %s: run = %d; want %d; stderr:\n%s", via, code, tt.code, stderr)
				}
				if strings.Contains(stdout+stderr, "SECRET") {
					t.Errorf("via %s: output shows the password:\n%s%s", via, stdout, stderr)
				}
			}
		})
	}
}

func TestRunEncodedPassword(t *testing.T) {
	// A percent-encoded password with , / # ? @ % works on real nodes.
	ctx := t.Context()
	for i, c := range cluster(t).Clients() {
		if err := c.Do(ctx, "ACL", "SETUSER", "enc-user", "on", ">"+secret, "~*", "&*", "+@all").Err(); err != nil {
			t.Fatalf("node %d: ACL SETUSER: %v", i, err)
		}
	}
	var urls []string
	for _, a := range cluster(t).Addrs() {
		urls = append(urls, encodedURL("enc-user", a))
	}
	p := startCLIEnv(t, []string{nodesEnv + "=" + strings.Join(urls, ",")}, "run", lockName(t), "--", "sh", "-c", `echo "[${REDLOCK_NODES-unset}]"`)
	if code := p.wait(t); code != 0 {
		t.Fatalf("run with the encoded password in $%s = %d; want 0; stderr:\n%s", nodesEnv, code, p.stderr.String())
	}
	if got := p.stdout.String(); got != "[unset]\n" {
		t.Errorf("the command saw REDLOCK_NODES %q; want it unset", got)
	}
}

func TestRunEnvFallback(t *testing.T) {
	name := lockName(t)
	holdLock(t, name, time.Minute)
	tests := []struct {
		name string
		env  []string
		args []string
		code int
		want string // in stderr
	}{
		{"wait from env", []string{"REDLOCK_WAIT=0"}, nil, exitTempFail, "not acquired within --wait 0s"},
		{"conflict code from env", []string{"REDLOCK_WAIT=0", "REDLOCK_CONFLICT_EXIT_CODE=3"}, nil, 3, "not acquired"},
		{"flag wins over env", []string{"REDLOCK_WAIT=0", "REDLOCK_CONFLICT_EXIT_CODE=3"}, []string{"--conflict-exit-code", "4"}, 4, "not acquired"},
		{"flag wait wins", []string{"REDLOCK_WAIT=forever"}, []string{"--wait", "0"}, exitTempFail, "not acquired"},
		{"bad env value", []string{"REDLOCK_TTL=soon"}, nil, exitUsage, "$REDLOCK_TTL"},
		{"bad env bool", []string{"REDLOCK_NO_FENCE=maybe"}, nil, exitUsage, "$REDLOCK_NO_FENCE"},
		{"conflict code out of range", nil, []string{"--wait", "0", "--conflict-exit-code", "300"}, exitUsage, "want 0 to 255"},
		{"verbose from env", []string{"REDLOCK_WAIT=0", "REDLOCK_VERBOSE=true"}, nil, exitTempFail, "waiting for lock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := append([]string{nodesEnv + "=" + nodesFlag(t)}, tt.env...)
			args := append(append([]string{"run"}, tt.args...), name, "--", "echo", "ran")
			p := startCLIEnv(t, env, args...)
			code := p.wait(t)
			if code != tt.code || !strings.Contains(p.stderr.String(), tt.want) {
				t.Errorf("run %q with %q = %d; want %d and stderr containing %q; stderr:\n%s", tt.args, tt.env, code, tt.code, tt.want, p.stderr.String())
			}
			if p.stdout.String() != "" {
				t.Errorf("the command ran (%q); want nothing run", p.stdout.String())
			}
		})
	}
	// status too: a bad $REDLOCK_TIMEOUT is a usage error naming it.
	p := startCLIEnv(t, []string{nodesEnv + "=" + nodesFlag(t), "REDLOCK_TIMEOUT=x"}, "status", name)
	if code := p.wait(t); code != exitUsage || !strings.Contains(p.stderr.String(), "$REDLOCK_TIMEOUT") {
		t.Errorf("status with REDLOCK_TIMEOUT=x = %d, %q; want %d naming the variable", code, p.stderr.String(), exitUsage)
	}
}

func TestVersion(t *testing.T) {
	for _, arg := range []string{"--version", "version"} {
		code, stdout, stderr := execCLI(t, arg)
		v, ok := strings.CutPrefix(strings.TrimSpace(stdout), "redlock ")
		if code != 0 || !ok || v == "" || strings.Contains(v, " ") || stderr != "" {
			t.Errorf("redlock %s = %d, %q, %q; want 0 and \"redlock VERSION\"", arg, code, stdout, stderr)
		}
	}
}

func TestMaxGrace(t *testing.T) {
	tests := []struct{ ttl, want time.Duration }{
		{30 * time.Second, 30*time.Second - 10*time.Second - 302*time.Millisecond - 500*time.Millisecond},
		{3 * time.Second, 3*time.Second - time.Second - 32*time.Millisecond - 100*time.Millisecond},
	}
	for _, tt := range tests {
		o := &runOptions{ttl: tt.ttl}
		if got := o.maxGrace(); got != tt.want {
			t.Errorf("maxGrace(ttl %v) = %v; want %v", tt.ttl, got, tt.want)
		}
	}
}

func TestRunGraceBound(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		args []string
		code int
	}{
		{"grace beyond the lease", nil, []string{"--ttl", "3s", "--grace", "2s"}, exitUsage},
		{"grace from env beyond the lease", []string{"REDLOCK_GRACE=2s"}, []string{"--ttl", "3s"}, exitUsage},
		{"grace within the lease", nil, []string{"--ttl", "3s", "--grace", "1s"}, 0},
		{"default grace cut to a short lease", nil, []string{"--ttl", "3s"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := append([]string{nodesEnv + "=" + nodesFlag(t)}, tt.env...)
			p := startCLIEnv(t, env, append(append([]string{"run"}, tt.args...), lockName(t), "--", "true")...)
			code := p.wait(t)
			if code != tt.code {
				t.Errorf("run %q %q = %d; want %d; stderr:\n%s", tt.env, tt.args, code, tt.code, p.stderr.String())
			}
			if tt.code == exitUsage && !strings.Contains(p.stderr.String(), "lease has left after a failed extend") {
				t.Errorf("stderr = %q; want the bound explained", p.stderr.String())
			}
		})
	}
}
