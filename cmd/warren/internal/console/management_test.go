package console

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/topology"
)

// Ports of the management-test node: apart from the machine's broker
// (5672, 15672, 25672), the RabbitMQ 4 nodes of scripts/ (5674, 5681-5683
// and their management ports) and the runtime's fault-test node (5690).
const (
	mgmtNodePort     = 5697
	mgmtNodeDistPort = 25697
	mgmtNodeHTTPPort = 15697
)

// startManagementNode starts a RabbitMQ node of the test's own with the
// management plugin, which the machine's broker does not run (and must not
// be reconfigured to run): its own name, ports, data, logs and Erlang
// cookie. It returns the AMQP and management URLs and stops the node when
// the test ends. In CI a missing installation fails the test.
func startManagementNode(t *testing.T) (amqpURL, mgmtURL string) {
	t.Helper()
	server, err := exec.LookPath("rabbitmq-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("rabbitmq-server is not installed (CI=true, so this fails rather than skips): %v", err)
		}
		t.Skipf("rabbitmq-server is not installed: %v", err)
	}
	ctl, _ := exec.LookPath("rabbitmqctl")
	// Debian's wrappers in /usr/sbin switch to the rabbitmq user, its home
	// and its cookie; the scripts they wrap take the environment as is.
	if _, err := os.Stat("/usr/lib/rabbitmq/bin/rabbitmq-server"); err == nil {
		server, ctl = "/usr/lib/rabbitmq/bin/rabbitmq-server", "/usr/lib/rabbitmq/bin/rabbitmqctl"
	}
	if portOpen(mgmtNodePort) {
		t.Fatalf("port %d is taken: another management-test node is running (or was left behind)", mgmtNodePort)
	}
	dir := t.TempDir()
	name := "warren-console-mgmt@localhost"
	files := map[string]string{
		"rabbitmq.conf": fmt.Sprintf("listeners.tcp.local = 127.0.0.1:%d\nmanagement.tcp.ip = 127.0.0.1\nmanagement.tcp.port = %d\n"+
			"collect_statistics_interval = 500\n", mgmtNodePort, mgmtNodeHTTPPort),
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
		"RABBITMQ_NODE_PORT="+strconv.Itoa(mgmtNodePort),
		"RABBITMQ_DIST_PORT="+strconv.Itoa(mgmtNodeDistPort),
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
	testenv.Eventually(t, "the management API to listen", func() bool { return portOpen(mgmtNodeHTTPPort) })
	return fmt.Sprintf("amqp://guest:guest@127.0.0.1:%d/", mgmtNodePort), fmt.Sprintf("http://127.0.0.1:%d/", mgmtNodeHTTPPort)
}

func portOpen(port int) bool {
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
	if err == nil {
		_ = c.Close()
	}
	return err == nil
}

// With the management API the overview shows the work queue's redelivery
// rate: a consumer that keeps handing its message back makes the broker
// redeliver it, and the figure rises above zero. The credentials come from
// the AMQP URL and appear nowhere on the page.
func TestManagementRedeliveryRate(t *testing.T) {
	amqpURL, mgmtURL := startManagementNode(t)
	top, err := topology.Build(topology.Spec{Consumers: []topology.ConsumerSpec{
		{Name: "flaky", Bindings: []string{"order.*"}, QueueType: topology.Classic, MaxAttempts: 1},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{amqpURL}, Topology: &top, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	mgmt, err := NewManagement(mgmtURL, amqpURL)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Broker: conn, Topology: top, BrokerURL: amqpURL, Token: testToken, Management: mgmt,
		Interval: 200 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Sample(ctx)
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	c := &consoleCase{t: t, conn: conn, top: top, srv: srv, http: hs}

	// A consumer that hands every delivery back: each comes again, redelivered.
	c.publish(topology.DefaultExchanges.Events, "order.placed", amqpPublishing(`{}`))
	ch, err := conn.OpenChannel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	deliveries, err := ch.Consume("flaky", "", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for d := range deliveries {
			time.Sleep(20 * time.Millisecond)
			_ = d.Nack(false, true)
		}
	}()

	var o overviewJSON
	testenv.Eventually(t, "a redelivery rate above zero", func() bool {
		c.getJSON("/api/overview", &o)
		r := o.Consumers[0].Rates
		return r != nil && r.Redelivered > 0 && r.Delivered > 0
	})
	if len(o.Unshown) != 0 || o.Management != mgmtURL[:len(mgmtURL)-1] {
		t.Errorf("with the management API: unshown %q, management %q", o.Unshown, o.Management)
	}
	_, raw := c.do("GET", "/api/overview", "", nil)
	if containsAny(raw, "guest:guest", ":guest@") {
		t.Errorf("the overview shows a password:\n%s", raw)
	}
	last := o.Consumers[0].History[len(o.Consumers[0].History)-1]
	if last[4] < 0 {
		t.Errorf("the history does not record the redelivery rate: %v", last)
	}
}
