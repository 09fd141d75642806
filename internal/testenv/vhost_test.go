package testenv

import (
	"bufio"
	"fmt"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
)

// With Main, vhosts come from batches: two takes of 3 and 6 make two
// batches of 8, hand no vhost out twice, and each one handed out takes
// the test's user; deleting them leaves none.
func TestVHostPoolMakesBatchesAndDeletesThemAll(t *testing.T) {
	base := AMQPURL(t)
	admin := BrokerAdmin(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	p := &vhostPool{batch: true}
	t.Cleanup(func() { _ = deleteVHosts(admin, slices.Collect(maps.Keys(p.made))) })
	a, err := p.take(admin, base, u.User.Username(), "pooltest", 3)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.take(admin, base, u.User.Username(), "pooltest", 6)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.made) != 2*poolBatch || len(p.free) != 2*poolBatch-9 {
		t.Fatalf("made %d, %d free; want %d and %d", len(p.made), len(p.free), 2*poolBatch, 2*poolBatch-9)
	}
	all := slices.Concat(a, b)
	if len(all) != 9 || len(slices.Compact(slices.Sorted(slices.Values(all)))) != 9 {
		t.Fatalf("handed out %q", all)
	}
	dial := func(name string) error {
		u.Path, u.RawPath = "/"+name, ""
		c, err := amqp.Dial(u.String())
		if err == nil {
			_ = c.Close()
		}
		return err
	}
	for _, name := range all {
		if err := dial(name); err != nil {
			t.Errorf("vhost %s: %v", name, err)
		}
	}
	if _, err := p.take(admin, "amqp://guest:guest@127.0.0.1:5999/", "guest", "pooltest", 1); err == nil {
		t.Error("a vhost of another broker came from the same pool")
	}
	if err := deleteVHosts(admin, slices.Collect(maps.Keys(p.made))); err != nil {
		t.Fatal(err)
	}
	for _, name := range all {
		if err := dial(name); err == nil {
			t.Errorf("vhost %s is still there", name)
		}
	}
}

func TestMain(m *testing.M) { Main(m) }

// childEnv makes this test binary, run again by
// TestInterruptedRunDeletesItsVHosts, the interrupted run.
const childEnv = "WARREN_TESTENV_INTERRUPTED_CHILD"

// A run of a package's tests under Main that is interrupted (Ctrl-C)
// while its tests hold vhosts deletes them before it ends.
func TestInterruptedRunDeletesItsVHosts(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		urls := VHosts(t, "interrupted", 2)
		fmt.Println(strings.Join(urls, " "))
		select {} // until interrupted
	}
	BrokerAdmin(t) // skips (or fails under CI=true) without one, as the child would
	cmd := exec.Command(os.Args[0], "-test.run", "^TestInterruptedRunDeletesItsVHosts$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := false
	t.Cleanup(func() {
		if !waited { // failed before the interrupt: the child cleans up all the same
			_ = cmd.Process.Signal(os.Interrupt)
			_ = cmd.Wait()
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	urls := strings.Fields(line)
	if err != nil || len(urls) != 2 {
		t.Fatalf("the child printed %q (%v); want the URLs of its two vhosts", line, err)
	}
	dial := func(url string) error {
		c, err := amqp.Dial(url)
		if err == nil {
			_ = c.Close()
		}
		return err
	}
	for _, u := range urls {
		if err := dial(u); err != nil {
			t.Fatalf("%s before the interrupt: %v", Redact(u), err)
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	waited = true
	if err := cmd.Wait(); err == nil {
		t.Error("the interrupted run exited 0")
	}
	for _, u := range urls {
		if err := dial(u); err == nil {
			t.Errorf("%s is still there after the interrupted run ended", Redact(u))
		}
	}
}
