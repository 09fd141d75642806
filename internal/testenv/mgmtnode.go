package testenv

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// NodePorts name a test's own RabbitMQ node and its ports, chosen apart
// from the machine's broker (5672, 15672, 25672), the RabbitMQ 4 nodes of
// scripts/ (5674, 5681-5683 and their management ports), the runtime's
// fault-test node (5690) and every other test's node: the console's is
// 5697, warren status's 5698.
type NodePorts struct {
	Name             string // the node's name before "@localhost"
	AMQP, Dist, HTTP int
}

// ManagementNode starts a RabbitMQ node of the test's own with the
// management plugin, which the machine's broker does not run (and must not
// be reconfigured to run): its own name, ports, data, logs and Erlang
// cookie. It returns the AMQP and management URLs and stops the node when
// the test ends. Two checkouts running the same test at once would start
// nodes of the same name and ports: the second waits for the first's node
// to stop (a lock per node name in the temporary directory, held until the
// test ends). In CI a missing installation fails the test.
func ManagementNode(t *testing.T, n NodePorts) (amqpURL, mgmtURL string) {
	t.Helper()
	server, err := exec.LookPath("rabbitmq-server")
	if err != nil {
		unavailable(t, fmt.Sprintf("rabbitmq-server is not installed: %v", err))
	}
	ctl, _ := exec.LookPath("rabbitmqctl")
	// Debian's wrappers in /usr/sbin switch to the rabbitmq user, its home
	// and its cookie; the scripts they wrap take the environment as is.
	if _, err := os.Stat("/usr/lib/rabbitmq/bin/rabbitmq-server"); err == nil {
		server, ctl = "/usr/lib/rabbitmq/bin/rabbitmq-server", "/usr/lib/rabbitmq/bin/rabbitmqctl"
	}
	LockNode(t, n.Name)
	if portOpen(n.AMQP) {
		t.Fatalf("port %d is taken: another %s node is running (or was left behind)", n.AMQP, n.Name)
	}
	dir := t.TempDir()
	name := n.Name + "@localhost"
	files := map[string]string{
		"rabbitmq.conf": fmt.Sprintf("listeners.tcp.local = 127.0.0.1:%d\nmanagement.tcp.ip = 127.0.0.1\nmanagement.tcp.port = %d\n"+
			"collect_statistics_interval = 500\n", n.AMQP, n.HTTP),
		"enabled_plugins":   "[rabbitmq_management].\n",
		"rabbitmq-env.conf": "",
	}
	for f, content := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(),
		"HOME="+dir, // its own Erlang cookie
		"RABBITMQ_NODENAME="+name,
		"RABBITMQ_NODE_IP_ADDRESS=127.0.0.1",
		"RABBITMQ_NODE_PORT="+strconv.Itoa(n.AMQP),
		"RABBITMQ_DIST_PORT="+strconv.Itoa(n.Dist),
		"RABBITMQ_CONFIG_FILE="+filepath.Join(dir, "rabbitmq.conf"),
		"RABBITMQ_CONF_ENV_FILE="+filepath.Join(dir, "rabbitmq-env.conf"),
		"RABBITMQ_ENABLED_PLUGINS_FILE="+filepath.Join(dir, "enabled_plugins"),
		"RABBITMQ_MNESIA_BASE="+filepath.Join(dir, "mnesia"),
		"RABBITMQ_LOG_BASE="+filepath.Join(dir, "log"),
		"RABBITMQ_PID_FILE="+filepath.Join(dir, "node.pid"),
		"RABBITMQ_PLUGINS_EXPAND_DIR="+filepath.Join(dir, "plugins-expand"),
	)
	log, err := os.Create(filepath.Join(dir, "server.out"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(server)
	// No RABBITMQ_ALLOW_INPUT: with it set (to anything) the node reads
	// stdin for a shell, which at end of file stops it.
	cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = env, dir, log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", server, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); _ = log.Close(); close(exited) }()
	rabbitmqctl := func(args ...string) ([]byte, error) {
		c := exec.Command(ctl, append([]string{"-n", name}, args...)...)
		c.Env = env
		return c.CombinedOutput()
	}
	t.Cleanup(func() {
		if out, err := rabbitmqctl("stop"); err != nil {
			t.Logf("stop %s: %v\n%s", name, err, out)
			_ = cmd.Process.Kill()
		}
		<-exited
	})
	if out, err := rabbitmqctl("wait", "--timeout", "300", filepath.Join(dir, "node.pid")); err != nil {
		server, _ := os.ReadFile(filepath.Join(dir, "server.out"))
		t.Fatalf("the node did not start: %v\n%s\nserver output:\n%s", err, out, server)
	}
	Eventually(t, "the management API to listen", func() bool { return portOpen(n.HTTP) })
	return fmt.Sprintf("amqp://guest:guest@127.0.0.1:%d/", n.AMQP), fmt.Sprintf("http://127.0.0.1:%d/", n.HTTP)
}

// LockNode holds an exclusive lock named after a test's own node until t ends,
// waiting while another process holds it. The descriptor is closed on exec
// (the default for os.OpenFile), so the node the test starts does not
// inherit the lock and keep it after the test.
func LockNode(t testing.TB, name string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "warren-node-"+name+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatalf("lock for node %s: %v", name, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Logf("node %s is in use by another test run; waiting for it", name)
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			_ = f.Close()
			t.Fatalf("lock for node %s: %v", name, err)
		}
	}
	t.Cleanup(func() { _ = f.Close() }) // closing releases the lock
}

func portOpen(port int) bool {
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
	if err == nil {
		_ = c.Close()
	}
	return err == nil
}
