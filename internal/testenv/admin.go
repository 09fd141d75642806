package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// Admin administers the broker at [AMQPURL] through rabbitmqctl: the
// command that WARREN_RABBITMQCTL names, split on spaces, node included,
// for example
//
//	WARREN_RABBITMQCTL="scripts/rabbitmq4 rabbitmqctl -n rmq4@localhost"
//
// for the RabbitMQ 4 node that scripts/rabbitmq4 runs inside its Debian
// root (`scripts/rabbitmq4 env` prints it). Unset, it is plain
// "rabbitmqctl", the machine's default node, and only then: a test given
// another broker through WARREN_AMQP_URL but no way to administer it would
// otherwise administer the wrong broker.
//
// The commands that create or delete vhosts (add_vhost, delete_vhost,
// import_definitions, and [VHost]'s) run one at a time per broker address
// across every test process of the machine; every command is killed, and
// fails, if it has not finished within a few minutes.
type Admin struct {
	cmd  []string
	addr string // the broker's host:port, which keys its vhost lock
}

// BrokerAdmin returns the [Admin] of the test's broker. It skips the test
// when the command is missing, and fails it under CI=true.
func BrokerAdmin(t testing.TB) *Admin {
	t.Helper()
	broker := AMQPURL(t)
	ctl := os.Getenv("WARREN_RABBITMQCTL")
	if ctl == "" {
		if broker != DefaultAMQPURL {
			unavailable(t, "administering the broker at "+Redact(broker)+" needs WARREN_RABBITMQCTL, the rabbitmqctl command of that broker")
		}
		ctl = "rabbitmqctl"
	}
	addr, err := hostPort(broker)
	if err != nil {
		t.Fatalf("broker address: %v", err)
	}
	a := &Admin{cmd: strings.Fields(ctl), addr: addr}
	if _, err := exec.LookPath(a.cmd[0]); err != nil {
		unavailable(t, fmt.Sprintf("administering the broker needs %s: %v", a.cmd[0], err))
	}
	return a
}

// Run runs rabbitmqctl with args and returns its standard output; it fails
// the test, with everything the command printed, if the command fails.
func (a *Admin) Run(t testing.TB, args ...string) string {
	t.Helper()
	return a.RunInput(t, nil, args...)
}

// RunInput is [Admin.Run] with stdin as the command's standard input.
func (a *Admin) RunInput(t testing.TB, stdin io.Reader, args ...string) string {
	t.Helper()
	out, err := a.Try(stdin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Try runs rabbitmqctl with args and stdin (nil for none) and returns its
// standard output, or an error carrying what it printed. A command that
// creates or deletes vhosts waits for the broker's vhost lock.
func (a *Admin) Try(stdin io.Reader, args ...string) (string, error) {
	if !slices.ContainsFunc(args, func(arg string) bool { return vhostCommands[arg] }) {
		return a.ctl(stdin, args...)
	}
	var out string
	err := a.withVHostLock(func() error {
		var err error
		out, err = a.ctl(stdin, args...)
		return err
	})
	return out, err
}

// vhostCommands are the rabbitmqctl commands that create or delete vhosts.
var vhostCommands = map[string]bool{"add_vhost": true, "delete_vhost": true, "import_definitions": true}

// withVHostLock runs do holding the vhost lock of a's broker.
func (a *Admin) withVHostLock(do func() error) error {
	unlock, err := lockVHosts(a.addr)
	if err != nil {
		return err
	}
	defer unlock()
	return do()
}

// ctl runs rabbitmqctl without the vhost lock: a command that needs it
// runs inside withVHostLock.
func (a *Admin) ctl(stdin io.Reader, args ...string) (string, error) {
	return runCtl(a.cmd, stdin, args...)
}

// ctlSlots bounds the rabbitmqctl commands of one test process that run at
// once: each starts an Erlang node of its own, and a dozen parallel tests
// starting them together on a small machine make some fail to reach the
// broker within the command's own timeout.
var ctlSlots = make(chan struct{}, 2)

// ctlTimeout bounds each rabbitmqctl command. The commands of the tests
// take seconds; one that has not finished within minutes waits on a broker
// that no longer answers, and is killed, Erlang node included, so that the
// test fails saying so rather than hang and hold its distribution port.
const ctlTimeout = 2 * time.Minute

// exUnavailable is rabbitmqctl's exit status when it could not reach or
// authenticate with the node ("unable to perform an operation on node"),
// which a loaded machine causes now and then; the command is run again.
const exUnavailable = 69

// runCtl runs a rabbitmqctl command of a test, a slot at a time, again
// when the node was momentarily unreachable, each time killed if it has
// not finished within ctlTimeout.
func runCtl(cmd []string, stdin io.Reader, args ...string) (string, error) {
	return runCtlCtx(context.Background(), cmd, stdin, args...)
}

// runCtlCtx is runCtl, with the command killed too when ctx ends.
func runCtlCtx(ctx context.Context, cmd []string, stdin io.Reader, args ...string) (string, error) {
	ctlSlots <- struct{}{}
	defer func() { <-ctlSlots }()
	var input []byte
	if stdin != nil {
		var err error
		if input, err = io.ReadAll(stdin); err != nil {
			return "", fmt.Errorf("%s %s: read its input: %w", strings.Join(cmd, " "), strings.Join(args, " "), err)
		}
	}
	for attempt := 1; ; attempt++ {
		var stdout, stderr bytes.Buffer
		runCtx, cancel := context.WithTimeoutCause(ctx, ctlTimeout, fmt.Errorf("not finished within %v", ctlTimeout))
		c := exec.CommandContext(runCtx, cmd[0], append(cmd[1:len(cmd):len(cmd)], args...)...)
		c.Cancel = func() error { return killTree(c.Process.Pid) }
		// A process the kill missed (one started as the tree was read)
		// may hold the output open: Wait stops waiting for it then.
		c.WaitDelay = 10 * time.Second
		if stdin != nil {
			c.Stdin = bytes.NewReader(input)
		}
		c.Stdout, c.Stderr = &stdout, &stderr
		err := c.Run()
		killed := context.Cause(runCtx)
		cancel()
		if err == nil {
			return stdout.String(), nil
		}
		if killed != nil {
			return stdout.String(), fmt.Errorf("%s %s: killed (%w): is the broker answering (rabbitmqctl status)?\n%s%s",
				strings.Join(cmd, " "), strings.Join(args, " "), killed, stdout.Bytes(), stderr.Bytes())
		}
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == exUnavailable && attempt < 3 {
			time.Sleep(time.Second)
			continue
		}
		return stdout.String(), fmt.Errorf("%s %s: %w\n%s%s", strings.Join(cmd, " "), strings.Join(args, " "), err, stdout.Bytes(), stderr.Bytes())
	}
}

// run runs cmd once: the cluster's node scripts and the probes that expect
// a stopped node to fail.
func run(cmd []string, stdin io.Reader, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	c := exec.Command(cmd[0], append(cmd[1:len(cmd):len(cmd)], args...)...)
	c.Stdin, c.Stdout, c.Stderr = stdin, &stdout, &stderr
	if err := c.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %w\n%s%s", strings.Join(cmd, " "), strings.Join(args, " "), err, stdout.Bytes(), stderr.Bytes())
	}
	return stdout.String(), nil
}

// unavailable skips the test, or fails it under CI=true, where a skipped
// broker test would hide a broken pipeline.
func unavailable(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true, so this fails rather than skips)", why)
	}
	t.Skip(why)
}

// Redact returns rawURL with its password, if any, replaced by "xxxxx".
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
