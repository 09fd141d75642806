package runtime

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/testenv"
)

// rabbitNode is a RabbitMQ node of the test's own, started from the
// machine's installation with its own name, ports, data, logs, plugins
// and Erlang cookie, so that restarting it or raising an alarm on it
// disturbs no other test. It is stopped when the test ends.
type rabbitNode struct {
	t      testing.TB
	dir    string
	ctlBin string // rabbitmqctl
	name   string // RABBITMQ_NODENAME
	port   int
	env    []string
	server *exec.Cmd
	exited chan struct{}
}

// Ports of the fault-test node: apart from the machine's broker (5672,
// 25672) and from the RabbitMQ 4 nodes of scripts/ (5674 and up).
const (
	faultNodePort     = 5690
	faultNodeDistPort = 25690
)

// startRabbitNode starts the node and waits until it accepts AMQP
// connections. In CI a missing installation fails the test.
func startRabbitNode(t testing.TB) *rabbitNode {
	t.Helper()
	server, err := exec.LookPath("rabbitmq-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("rabbitmq-server is not installed: %v", err)
		}
		t.Skipf("rabbitmq-server is not installed: %v", err)
	}
	ctl, err := exec.LookPath("rabbitmqctl")
	if err != nil {
		t.Fatalf("rabbitmqctl: %v", err)
	}
	// The Debian wrappers in /usr/sbin switch to the rabbitmq user and to
	// its home and cookie; the scripts they wrap take the environment as is.
	if _, err := os.Stat("/usr/lib/rabbitmq/bin/rabbitmq-server"); err == nil {
		server, ctl = "/usr/lib/rabbitmq/bin/rabbitmq-server", "/usr/lib/rabbitmq/bin/rabbitmqctl"
	}
	testenv.LockNode(t, "warren-fault") // another checkout's run of the same test waits
	dir := t.TempDir()
	n := &rabbitNode{t: t, dir: dir, ctlBin: ctl, name: "warren-fault@localhost", port: faultNodePort, exited: make(chan struct{})}
	files := map[string]string{
		"rabbitmq.conf":     fmt.Sprintf("listeners.tcp.local = 127.0.0.1:%d\n", n.port),
		"enabled_plugins":   "[].\n",
		"rabbitmq-env.conf": "",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	n.env = append(os.Environ(),
		"HOME="+dir, // the Erlang cookie: its own, in the temporary folder
		"RABBITMQ_NODENAME="+n.name,
		"RABBITMQ_NODE_IP_ADDRESS=127.0.0.1",
		"RABBITMQ_NODE_PORT="+strconv.Itoa(n.port),
		"RABBITMQ_DIST_PORT="+strconv.Itoa(faultNodeDistPort),
		"RABBITMQ_CONFIG_FILE="+filepath.Join(dir, "rabbitmq.conf"),
		"RABBITMQ_CONF_ENV_FILE="+filepath.Join(dir, "rabbitmq-env.conf"),
		"RABBITMQ_ENABLED_PLUGINS_FILE="+filepath.Join(dir, "enabled_plugins"),
		"RABBITMQ_MNESIA_BASE="+filepath.Join(dir, "mnesia"),
		"RABBITMQ_LOG_BASE="+filepath.Join(dir, "log"),
		"RABBITMQ_PID_FILE="+filepath.Join(dir, "node.pid"),
		"RABBITMQ_PLUGINS_EXPAND_DIR="+filepath.Join(dir, "plugins-expand"),
	)
	if addr := fmt.Sprintf("127.0.0.1:%d", n.port); portOpen(addr) {
		t.Fatalf("port %d is taken: another fault-test node is running (or left behind); stop it first", n.port)
	}
	n.server = exec.Command(server)
	n.server.Env = n.env
	n.server.Dir = dir
	log, err := os.Create(filepath.Join(dir, "server.out"))
	if err != nil {
		t.Fatal(err)
	}
	n.server.Stdout, n.server.Stderr = log, log
	if err := n.server.Start(); err != nil {
		t.Fatalf("start %s: %v", server, err)
	}
	go func() { _ = n.server.Wait(); _ = log.Close(); close(n.exited) }()
	t.Cleanup(n.stop)
	// wait blocks until the pid file exists and the node has booted.
	if out, err := n.run("wait", "--timeout", "120", filepath.Join(dir, "node.pid")); err != nil {
		server, _ := os.ReadFile(filepath.Join(dir, "server.out"))
		t.Fatalf("the node did not start: %v\n%s\nserver output:\n%s", err, out, server)
	}
	testenv.Eventually(t, "the node to accept AMQP connections", func() bool { return n.accepting() })
	return n
}

// url is the node's AMQP URL.
func (n *rabbitNode) url() string { return fmt.Sprintf("amqp://guest:guest@127.0.0.1:%d/", n.port) }

// ctl runs rabbitmqctl against this node alone and fails the test on error.
func (n *rabbitNode) ctl(args ...string) string {
	n.t.Helper()
	out, err := n.run(args...)
	if err != nil {
		n.t.Fatalf("rabbitmqctl -n %s %v: %v\n%s", n.name, args, err, out)
	}
	return out
}

func (n *rabbitNode) run(args ...string) (string, error) {
	cmd := exec.Command(n.ctlBin, append([]string{"-n", n.name}, args...)...)
	cmd.Env = n.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// accepting reports whether the node accepts TCP connections on its port.
func (n *rabbitNode) accepting() bool { return portOpen(fmt.Sprintf("127.0.0.1:%d", n.port)) }

func portOpen(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		_ = c.Close()
	}
	return err == nil
}

// stop stops the node and waits for it to exit; a node that does not
// stop is killed (only this one: the process the test started).
func (n *rabbitNode) stop() {
	_, _ = n.run("stop")
	select {
	case <-n.exited:
	case <-time.After(30 * time.Second):
		_ = n.server.Process.Kill()
		<-n.exited
	}
}
