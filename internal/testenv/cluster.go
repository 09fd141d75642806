package testenv

import (
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Cluster is a RabbitMQ cluster whose nodes a test stops, kills and starts
// again. It is given by environment (`scripts/rabbitmq4 env cluster` prints
// it for the three-node cluster that script runs):
//
//	WARREN_CLUSTER_URLS        the nodes' AMQP URLs, comma-separated
//	WARREN_CLUSTER_NODES       the nodes' names, in the same order
//	WARREN_CLUSTER_RABBITMQCTL rabbitmqctl for them; the test adds -n NODE
//	WARREN_CLUSTER_START       a command that, given a node's name, starts
//	                           it and returns once it runs
//	WARREN_CLUSTER_STREAM_PORTS the nodes' stream protocol ports, in the
//	                           same order (optional; default 5552 each)
//
// Cluster tests stop nodes: they run only when WARREN_CLUSTER_URLS is set
// (make test-cluster), and skip otherwise, as disruptive tests do.
type Cluster struct {
	Nodes []ClusterNode
	ctl   []string
	start []string
}

// ClusterNode is one node of a [Cluster].
type ClusterNode struct {
	Name string // the Erlang node name, e.g. rmq4c1@localhost
	URL  string // its AMQP URL
	// StreamPort is its stream protocol port (rabbitmq_stream plugin).
	StreamPort int
}

// NewCluster returns the cluster given by environment, every node of it
// answering, and starts again, when the test ends, any node the test left
// stopped.
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	urls := os.Getenv("WARREN_CLUSTER_URLS")
	if urls == "" {
		t.Skip("stops cluster nodes; runs with WARREN_CLUSTER_URLS and the rest of `scripts/rabbitmq4 env cluster` (make test-cluster does)")
	}
	c := &Cluster{
		ctl:   strings.Fields(os.Getenv("WARREN_CLUSTER_RABBITMQCTL")),
		start: strings.Fields(os.Getenv("WARREN_CLUSTER_START")),
	}
	names := strings.Split(os.Getenv("WARREN_CLUSTER_NODES"), ",")
	list := strings.Split(urls, ",")
	if len(names) != len(list) || len(c.ctl) == 0 || len(c.start) == 0 {
		t.Fatalf("WARREN_CLUSTER_URLS (%d), WARREN_CLUSTER_NODES (%d), WARREN_CLUSTER_RABBITMQCTL and WARREN_CLUSTER_START: expected one name per URL and both commands",
			len(list), len(names))
	}
	ports := make([]int, len(list))
	for i := range ports {
		ports[i] = DefaultStreamPort
	}
	if raw := os.Getenv("WARREN_CLUSTER_STREAM_PORTS"); raw != "" {
		fields := strings.Split(raw, ",")
		if len(fields) != len(list) {
			t.Fatalf("WARREN_CLUSTER_STREAM_PORTS has %d ports for %d nodes: expected one per URL", len(fields), len(list))
		}
		for i, f := range fields {
			p, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				t.Fatalf("WARREN_CLUSTER_STREAM_PORTS[%d] %q: expected a port number", i, f)
			}
			ports[i] = p
		}
	}
	for i, u := range list {
		require(t, "RabbitMQ node "+names[i], u)
		c.Nodes = append(c.Nodes, ClusterNode{Name: names[i], URL: u, StreamPort: ports[i]})
	}
	t.Cleanup(func() { c.StartStopped(t) })
	return c
}

// StartStopped starts every node that does not run, so that the next test
// finds the cluster whole. [NewCluster] registers it as a cleanup; a test
// whose own cleanups need the cluster whole registers it again after them.
func (c *Cluster) StartStopped(t testing.TB) {
	t.Helper()
	running := c.running()
	for _, n := range c.Nodes {
		if !slices.Contains(running, n.Name) {
			if out, err := run(c.start, nil, n.Name); err != nil {
				t.Errorf("start %s again after the test: %v\n%s", n.Name, err, out)
			}
		}
	}
}

// URLsFrom returns every node's AMQP URL with node's first, then the others
// in node order: Dial connects to node, and fails over to the others.
func (c *Cluster) URLsFrom(node string) []string {
	urls := []string{}
	for _, n := range c.Nodes {
		if n.Name == node {
			urls = append([]string{n.URL}, urls...)
		} else {
			urls = append(urls, n.URL)
		}
	}
	return urls
}

// StreamPortsFrom returns every node's stream port in the order of
// [Cluster.URLsFrom](node), for Config.StreamPorts.
func (c *Cluster) StreamPortsFrom(node string) []int {
	ports := []int{}
	for _, n := range c.Nodes {
		if n.Name == node {
			ports = append([]int{n.StreamPort}, ports...)
		} else {
			ports = append(ports, n.StreamPort)
		}
	}
	return ports
}

// URLs returns every node's AMQP URL, in node order: what a service gives
// Dial.
func (c *Cluster) URLs() []string {
	urls := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		urls[i] = n.URL
	}
	return urls
}

// Node returns the node named name; it fails the test for a name that is
// not one of the cluster's.
func (c *Cluster) Node(t testing.TB, name string) ClusterNode {
	t.Helper()
	for _, n := range c.Nodes {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("%q is not a node of the cluster %v", name, c.Nodes)
	return ClusterNode{}
}

// Ctl runs rabbitmqctl against node and returns its standard output; it
// fails the test if the command fails.
func (c *Cluster) Ctl(t testing.TB, node string, args ...string) string {
	t.Helper()
	out, err := run(c.ctl, nil, append([]string{"-n", node}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// running returns the nodes the cluster reports running, asking each node
// in turn until one answers; none if none does.
func (c *Cluster) running() []string {
	for _, n := range c.Nodes {
		out, err := run(c.ctl, nil, "-n", n.Name, "-q", "cluster_status", "--formatter", "json")
		if err != nil {
			continue
		}
		var status struct {
			Running []string `json:"running_nodes"`
		}
		if json.Unmarshal([]byte(out), &status) == nil {
			return status.Running
		}
	}
	return nil
}

// Stop shuts node down the way an operator does (rabbitmqctl stop): its
// client connections are closed with connection.close, its queue replicas
// hand over leadership, then the node exits.
func (c *Cluster) Stop(t testing.TB, node string) {
	t.Helper()
	c.Ctl(t, node, "-q", "stop")
}

// Kill ends node as a crash does: the Erlang VM halts at once, without
// closing connections or handing anything over, so clients see their TCP
// connections end. It returns once the node no longer answers.
func (c *Cluster) Kill(t testing.TB, node string) {
	t.Helper()
	// Halt a moment after eval has answered, so that rabbitmqctl itself
	// succeeds and any error it reports is a real one.
	c.Ctl(t, node, "-q", "eval", `spawn(fun() -> timer:sleep(200), erlang:halt(137) end), ok.`)
	Eventually(t, node+" to be gone", func() bool {
		_, err := run(c.ctl, nil, "-n", node, "-q", "ping")
		return err != nil
	})
}

// Start starts node again and returns once it runs.
func (c *Cluster) Start(t testing.TB, node string) {
	t.Helper()
	if out, err := run(c.start, nil, node); err != nil {
		t.Fatalf("start %s: %v\n%s", node, err, out)
	}
}

// QueueState is what the cluster reports of one quorum queue.
type QueueState struct {
	Name    string   `json:"name"`
	Leader  string   `json:"leader"`
	Members []string `json:"members"`
	Online  []string `json:"online"`
}

// Queue asks the cluster, through a node other than except (a node the
// test stopped, or "" for none), for queue's leader and replicas in the
// default vhost.
func (c *Cluster) Queue(t testing.TB, queue, except string) QueueState {
	t.Helper()
	q, ok := c.Queues(t, except)[queue]
	if !ok {
		t.Fatalf("queue %s is not on the cluster", queue)
	}
	return q
}

// Queues is [Cluster.Queue] for every queue of the default vhost at once,
// by name: one rabbitmqctl call, which takes a second or more.
func (c *Cluster) Queues(t testing.TB, except string) map[string]QueueState {
	t.Helper()
	var errs []string
	for _, n := range c.Nodes {
		if n.Name == except {
			continue
		}
		out, err := run(c.ctl, nil, "-n", n.Name, "-q", "list_queues", "name", "leader", "members", "online", "--formatter", "json")
		if err != nil {
			errs = append(errs, err.Error()) // the node may be down: ask the next
			continue
		}
		var states []QueueState
		if err := json.Unmarshal([]byte(out), &states); err != nil {
			t.Fatalf("list_queues on %s: %v\n%s", n.Name, err, out)
		}
		byName := make(map[string]QueueState, len(states))
		for _, s := range states {
			slices.Sort(s.Members)
			slices.Sort(s.Online)
			byName[s.Name] = s
		}
		return byName
	}
	t.Fatalf("no node answered list_queues:\n%s", strings.Join(errs, "\n"))
	return nil
}
