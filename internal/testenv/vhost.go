package testenv

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
)

// VHost creates a RabbitMQ virtual host that belongs to one test and
// returns AMQPURL pointed at it. Generated packages declare fixed exchange
// and queue names, exactly as a service would use them; a vhost of its own
// keeps such a test apart from every other test and from a `make demo`
// running at the same time. Deleting the vhost when the test ends (or,
// with [Main], once the package's tests have run) deletes everything
// declared in it.
//
// It administers the broker through [BrokerAdmin]: it skips without a way
// to, and fails under CI=true.
func VHost(t testing.TB, prefix string) string {
	t.Helper()
	return VHosts(t, prefix, 1)[0]
}

// VHosts is [VHost] for a test with n cases that each need a vhost of
// their own: it creates them together and deletes them together when t
// ends (or as [Main] says). Every rabbitmqctl command starts an Erlang
// node of its own, which costs about a second of CPU; VHosts takes one
// command to create n vhosts and one to delete them, where n calls of
// VHost take 2n. They wait for the commands that create and delete vhosts
// of every other test process on the machine, one at a time per broker
// ([Admin]).
func VHosts(t testing.TB, prefix string, n int) []string {
	t.Helper()
	base := AMQPURL(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("broker URL: %v", err)
	}
	admin := BrokerAdmin(t)
	names, err := pool.take(admin, base, u.User.Username(), prefix, n)
	if err != nil {
		t.Fatal(err)
	}
	if !pool.deferred() {
		t.Cleanup(func() {
			if err := deleteVHosts(admin, names); err != nil {
				t.Error(err)
			}
		})
	}
	urls := make([]string, n)
	for i, name := range names {
		u.Path, u.RawPath = "/"+name, ""
		vhostURL := u.String()
		// The command returns once the definitions are applied; should a
		// broker apply them in the background, the test waits until it
		// may use the vhost.
		Eventually(t, "vhost "+name+" to accept the test's user", func() bool {
			c, err := amqp.Dial(vhostURL)
			if err == nil {
				_ = c.Close()
			}
			return err == nil
		})
		urls[i] = vhostURL
	}
	return urls
}

// pool holds the vhosts of a test process. Without [Main], each call of
// VHosts creates its vhosts and deletes them when its test ends: two
// rabbitmqctl commands. With Main, vhosts are created several at a time
// (one command per poolBatch) and every one is deleted in one command once
// the package's tests have run: a package of thirty vhost tests takes
// five commands instead of sixty.
var pool vhostPool

const poolBatch = 8

type vhostPool struct {
	mu    sync.Mutex
	batch bool            // set by Main
	admin *Admin          // the admin of the broker the vhosts are on
	base  string          // the broker URL they were made for
	free  []string        // created, not handed out yet
	made  map[string]bool // every vhost created, to delete
}

func (p *vhostPool) deferred() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.batch
}

// take returns n new vhosts, each given to the test's user, creating what
// the pool lacks.
func (p *vhostPool) take(admin *Admin, base, user, prefix string, n int) ([]string, error) {
	p.mu.Lock()
	if !p.batch {
		p.mu.Unlock()
		names := make([]string, n)
		for i := range names {
			names[i] = Name(prefix)
		}
		return names, createVHosts(admin, user, names)
	}
	// Held while a batch is made, so that tests running in parallel wait
	// for it rather than each make one.
	defer p.mu.Unlock()
	if p.base != "" && p.base != base {
		return nil, fmt.Errorf("vhosts of %s asked for after vhosts of %s in the same test process", Redact(base), Redact(p.base))
	}
	p.base, p.admin = base, admin
	if len(p.free) < n {
		// Named after the test binary (its package), not the test that
		// happened to ask first: the next tests get the rest.
		label := strings.TrimSuffix(filepath.Base(os.Args[0]), ".test")
		more := make([]string, max(n-len(p.free), poolBatch))
		for i := range more {
			more[i] = Name(label)
		}
		if err := createVHosts(admin, user, more); err != nil {
			return nil, err
		}
		if p.made == nil {
			p.made = map[string]bool{}
		}
		for _, name := range more {
			p.made[name] = true
		}
		p.free = append(p.free, more...)
	}
	names := p.free[:n:n]
	p.free = p.free[n:]
	return names, nil
}

// createVHosts creates names and gives user every permission on them, in
// one import_definitions of these alone, holding the broker's vhost lock.
func createVHosts(admin *Admin, user string, names []string) error {
	type permission struct {
		User      string `json:"user"`
		VHost     string `json:"vhost"`
		Configure string `json:"configure"`
		Write     string `json:"write"`
		Read      string `json:"read"`
	}
	var defs struct {
		VHosts      []map[string]string `json:"vhosts"`
		Permissions []permission        `json:"permissions"`
	}
	for _, name := range names {
		defs.VHosts = append(defs.VHosts, map[string]string{"name": name})
		defs.Permissions = append(defs.Permissions, permission{user, name, ".*", ".*", ".*"})
	}
	body, err := json.Marshal(defs)
	if err != nil {
		return err
	}
	return admin.withVHostLock(func() error {
		if _, err := admin.ctl(strings.NewReader(string(body)), "--quiet", "import_definitions"); err != nil {
			_ = removeVHosts(admin, names) // those made before the command failed
			return err
		}
		return nil
	})
}

// Main runs a package's tests with the vhosts of [VHost] and [VHosts]
// made several at a time and deleted together once the tests have run
// (each rabbitmqctl command starts an Erlang node of its own, about a
// second of CPU). A package whose tests make several vhosts calls it from
// its TestMain:
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
//
// A failure to delete them fails the run. An interrupted run (Ctrl-C, or
// SIGTERM) deletes them too before it ends, rather than leave them on the
// broker; a second interrupt ends it at once.
func Main(m *testing.M) {
	pool.mu.Lock()
	pool.batch = true
	pool.mu.Unlock()
	interrupted := make(chan os.Signal, 1)
	signal.Notify(interrupted, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig, ok := <-interrupted
		if !ok {
			return
		}
		signal.Stop(interrupted)
		fmt.Fprintf(os.Stderr, "testenv: %v: deleting the test vhosts\n", sig)
		deletePool()
		os.Exit(130)
	}()
	code := m.Run()
	signal.Stop(interrupted)
	close(interrupted)
	if !deletePool() {
		code = max(code, 1)
	}
	os.Exit(code)
}

// deletePool deletes every vhost the pool made, and reports on stderr and
// with false when that failed.
func deletePool() bool {
	pool.mu.Lock()
	names := slices.Sorted(maps.Keys(pool.made))
	admin := pool.admin
	pool.made = nil
	pool.mu.Unlock()
	if len(names) == 0 {
		return true
	}
	if err := deleteVHosts(admin, names); err != nil {
		fmt.Fprintln(os.Stderr, "testenv: deleting the test vhosts:", err)
		return false
	}
	return true
}

// deleteVHosts deletes the vhosts that exist of names, holding the
// broker's vhost lock: one at a time with delete_vhost, or several in one
// rabbitmqctl eval of rabbit_vhost:delete (the broker's own function
// behind delete_vhost), and one at a time again should that not answer ok
// for each.
func deleteVHosts(admin *Admin, names []string) error {
	return admin.withVHostLock(func() error { return removeVHosts(admin, names) })
}

// removeVHosts is deleteVHosts for a caller that holds the lock.
func removeVHosts(admin *Admin, names []string) error {
	if len(names) > 1 {
		quoted := make([]string, len(names))
		for i, n := range names {
			quoted[i] = "<<" + strconv.Quote(n) + ">>"
		}
		expr := fmt.Sprintf(`[rabbit_vhost:delete(V, <<"warren-test">>) || V <- [%s], rabbit_vhost:exists(V)].`, strings.Join(quoted, ","))
		out, err := admin.ctl(nil, "--quiet", "eval", expr)
		// A list of ok, one per vhost that existed, which rabbitmqctl
		// breaks over lines when it is long.
		if err == nil && strings.Trim(strings.Join(strings.Fields(out), ""), "[ok,]") == "" {
			return nil
		}
	}
	var errs []string
	for _, n := range names {
		if _, err := admin.ctl(nil, "--quiet", "delete_vhost", n); err != nil && (len(names) == 1 || !strings.Contains(err.Error(), "does not exist")) {
			errs = append(errs, fmt.Sprintf("delete vhost %s: %v", n, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return nil
}
