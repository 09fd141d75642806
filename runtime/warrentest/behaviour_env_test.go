package warrentest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/amqpmsg"
	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/internal/transport"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/poison"
	"github.com/warrenbus/warren/runtime/topology"
	"github.com/warrenbus/warren/runtime/warrentest"
)

// The behaviour suite states the runtime's semantics once, as scenarios,
// and runs each against two targets: the real RabbitMQ broker ("broker": a
// vhost of the scenario's own, real time) and the in-process bus ("bus":
// warrentest.Run, virtual time). A scenario sees only what both offer
// (env) and observes handler calls through its own handlers (recorder),
// so the same assertion holds on both.

// env is what a scenario may use: the same on both targets.
type env interface {
	// Target is "broker" or "bus", for messages only: a scenario must not
	// branch on it.
	Target() string
	// BrokerVersion is the RabbitMQ version both targets speak as: the
	// broker's, which the bus announces too.
	BrokerVersion() string
	Context() context.Context
	Conn() *runtime.Conn
	Topology() topology.Topology
	// Publisher publishes on the topology's events exchange; it is closed
	// when the scenario ends.
	Publisher() *runtime.Publisher
	// Start runs r (a consumer or responder of the topology, by its name)
	// until the scenario ends; err is r's constructor's error.
	Start(name string, r warrentest.Runner, err error)
	// Idle returns once nothing is left to do: no handler running, no
	// delivery unsettled, no fact waiting for a started consumer, no retry
	// still to come. It fails the test naming what is still busy after a
	// generous deadline.
	Idle()
	// DropConnections cuts every connection of the scenario as a broker
	// that goes away does, and returns once they are gone: unacked
	// deliveries return to their queues, and the runtime reconnects.
	DropConnections()
	// Poisoned returns the messages waiting in consumer's poison queue,
	// with their headers, leaving them there.
	Poisoned(consumer string) []poisoned
}

// poisoned is one message of a poison queue.
type poisoned struct {
	MessageID string
	Headers   amqp.Table
	Body      []byte
}

func (p poisoned) header(name string) any { return p.Headers[name] }

// headerInt reads an integer header of any AMQP integer type; -1 when
// absent.
func headerInt(h map[string]any, name string) int {
	if _, ok := h[name]; !ok {
		return -1
	}
	return amqpmsg.HeaderInt(amqp.Table(h), name)
}

// target runs a scenario's body against one transport.
type target interface {
	name() string
	run(t *testing.T, top topology.Topology, body func(t *testing.T, e env))
}

// behaviourScenario is one behaviour of the runtime, stated once.
type behaviourScenario struct {
	name string
	spec topology.Spec
	// only, when set, names the one target the scenario runs on, and why
	// names what the other cannot do faithfully.
	only, why string
	run       func(t *testing.T, e env)
}

func runScenarios(t *testing.T, scenarios []behaviourScenario) {
	targets := []target{brokerTarget{}, busTarget{}}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			top, err := topology.Build(sc.spec)
			if err != nil {
				t.Fatalf("topology: %v", err)
			}
			for _, tg := range targets {
				t.Run(tg.name(), func(t *testing.T) {
					if sc.only != "" && sc.only != tg.name() {
						// Not faithful on this target: said so, by name, in
						// the test's output, never passed silently.
						t.Skipf("runs on the %s only: %s", sc.only, sc.why)
					}
					tg.run(t, top, sc.run)
				})
			}
		})
	}
}

// --- the bus ---------------------------------------------------------------

type busTarget struct{}

func (busTarget) name() string { return "bus" }

func (busTarget) run(t *testing.T, top topology.Topology, body func(t *testing.T, e env)) {
	// The bus speaks as the broker the suite runs against, so that the two
	// targets compare like with like on every release line (make
	// test-rabbitmq4 runs the suite against RabbitMQ 4).
	version := suiteBrokerVersion()
	warrentest.Run(t, top, func(t *testing.T, b *warrentest.Bus) {
		e := &busEnv{b: b, version: version}
		defer e.close()
		body(t, e)
	}, warrentest.WithBrokerVersion(version))
}

var (
	suiteVersionOnce sync.Once
	suiteVersion     string
)

// suiteBrokerVersion is the version the suite's broker announces, or the
// bus's default when there is no broker to ask (the broker target then
// skips, or fails under CI).
func suiteBrokerVersion() string {
	suiteVersionOnce.Do(func() {
		suiteVersion = "3.13.7"
		addr := os.Getenv("WARREN_AMQP_URL")
		if addr == "" {
			addr = "amqp://guest:guest@127.0.0.1:5672/"
		}
		conn, err := transport.Dial(context.Background(), addr, amqp.Config{Dial: amqp.DefaultDial(5 * time.Second)})
		if err != nil {
			return
		}
		defer conn.Close()
		if v := conn.ServerVersion(); v != "" {
			suiteVersion = v
		}
	})
	return suiteVersion
}

// versionAtLeast reports whether version is major.minor or later.
func versionAtLeast(version string, major, minor int) bool {
	parts := strings.SplitN(version, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, _ := strconv.Atoi(parts[0])
	mi, _ := strconv.Atoi(parts[1])
	return ma > major || (ma == major && mi >= minor)
}

type busEnv struct {
	b       *warrentest.Bus
	version string
	mu      sync.Mutex
	pub     *runtime.Publisher
}

func (e *busEnv) Target() string              { return "bus" }
func (e *busEnv) BrokerVersion() string       { return e.version }
func (e *busEnv) Context() context.Context    { return e.b.Context() }
func (e *busEnv) Conn() *runtime.Conn         { return e.b.Conn() }
func (e *busEnv) Topology() topology.Topology { return e.b.Topology() }
func (e *busEnv) Idle()                       { e.b.T().Helper(); e.b.Idle() }

func (e *busEnv) Start(name string, r warrentest.Runner, err error) {
	e.b.T().Helper()
	e.b.Start(name, r, err)
}

func (e *busEnv) DropConnections() { e.b.DropConnections() }

func (e *busEnv) Publisher() *runtime.Publisher {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.pub == nil {
		e.pub = newPublisher(e.b.T(), e.Conn(), e.Topology())
	}
	return e.pub
}

func (e *busEnv) close() {
	if e.pub != nil {
		_ = e.pub.Close()
	}
}

func (e *busEnv) Poisoned(consumer string) []poisoned {
	e.b.T().Helper()
	c := mustConsumer(e.b.T(), e.Topology(), consumer)
	var out []poisoned
	for _, m := range e.b.Waiting(c.PoisonQueue) {
		out = append(out, poisoned{MessageID: m.MessageID, Headers: m.Headers, Body: m.Body})
	}
	return out
}

// --- the broker ------------------------------------------------------------

type brokerTarget struct{}

func (brokerTarget) name() string { return "broker" }

func (brokerTarget) run(t *testing.T, top topology.Topology, body func(t *testing.T, e env)) {
	// testenv skips without a broker on a developer machine and fails
	// under CI=true: a broker target never passes by not running.
	vhostURL := testenv.VHost(t, "behaviour")
	u, err := url.Parse(vhostURL)
	if err != nil {
		t.Fatal(err)
	}
	e := &brokerEnv{t: t, top: top, vhost: strings.TrimPrefix(u.Path, "/"), admin: testenv.BrokerAdmin(t), started: map[string]bool{}}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("WARREN_BEHAVIOUR_LOG") != "" {
		logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	dialCtx, cancel := context.WithTimeout(e.ctx, testenv.DefaultWait)
	defer cancel()
	conn, err := runtime.Dial(dialCtx, runtime.Config{URLs: []string{vhostURL}, Topology: &e.top, Logger: logger, ConnectionName: t.Name()})
	if err != nil {
		t.Fatalf("dial the broker: %v", err)
	}
	e.conn = conn
	t.Cleanup(func() { _ = conn.Close() }) // after the runners stopped: cleanups run last in, first out
	t.Cleanup(e.teardown)
	body(t, e)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

type brokerEnv struct {
	t      *testing.T
	top    topology.Topology
	vhost  string
	admin  *testenv.Admin
	ctx    context.Context
	cancel context.CancelFunc
	conn   *runtime.Conn

	mu      sync.Mutex
	pub     *runtime.Publisher
	runners []*brokerRunner
	started map[string]bool
}

type brokerRunner struct {
	name string
	done chan struct{}
	err  error
}

func (e *brokerEnv) Target() string              { return "broker" }
func (e *brokerEnv) BrokerVersion() string       { return suiteBrokerVersion() }
func (e *brokerEnv) Context() context.Context    { return e.ctx }
func (e *brokerEnv) Conn() *runtime.Conn         { return e.conn }
func (e *brokerEnv) Topology() topology.Topology { return e.top }

func (e *brokerEnv) Publisher() *runtime.Publisher {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.pub == nil {
		e.pub = newPublisher(e.t, e.conn, e.top)
	}
	return e.pub
}

func (e *brokerEnv) Start(name string, r warrentest.Runner, err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatalf("start %s: %v", name, err)
	}
	rn := &brokerRunner{name: name, done: make(chan struct{})}
	e.mu.Lock()
	e.runners = append(e.runners, rn)
	e.started[name] = true
	e.mu.Unlock()
	go func() {
		defer close(rn.done)
		rn.err = r.Run(e.ctx)
	}()
}

func (e *brokerEnv) stoppedEarly() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, r := range e.runners {
		select {
		case <-r.done:
			if e.ctx.Err() == nil {
				out = append(out, fmt.Sprintf("%s stopped early: %v", r.name, r.err))
			}
		default:
		}
	}
	return out
}

func (e *brokerEnv) teardown() {
	for _, s := range e.stoppedEarly() {
		e.t.Errorf("%s", s)
	}
	e.cancel()
	e.mu.Lock()
	runners, pub := e.runners, e.pub
	e.mu.Unlock()
	for _, r := range runners {
		select {
		case <-r.done:
			if r.err != nil {
				e.t.Errorf("%s: Run returned %v", r.name, r.err)
			}
		case <-time.After(testenv.DefaultWait):
			e.t.Errorf("%s did not stop within %v of the end of the test", r.name, testenv.DefaultWait)
		}
	}
	if pub != nil {
		_ = pub.Close()
	}
}

// connections returns the pids of the connections to the scenario's vhost.
func (e *brokerEnv) connections() []string {
	e.t.Helper()
	// The table, not JSON: the JSON formatter writes pids in a form
	// close_connection does not take.
	out, err := e.admin.Try(nil, "-q", "list_connections", "--no-table-headers", "pid", "vhost")
	if err != nil {
		e.t.Fatalf("list_connections: %v", err)
	}
	var pids []string
	for _, line := range strings.Split(out, "\n") {
		pid, vhost, ok := strings.Cut(strings.TrimSpace(line), "\t")
		if ok && vhost == e.vhost {
			pids = append(pids, pid)
		}
	}
	return pids
}

// DropConnections closes the connections to the scenario's vhost, and
// no other: other tests on the broker are not disturbed.
func (e *brokerEnv) DropConnections() {
	e.t.Helper()
	pids := e.connections()
	if len(pids) == 0 {
		e.t.Fatal("DropConnections: no connection to the vhost")
	}
	for _, pid := range pids {
		if _, err := e.admin.Try(nil, "-q", "close_connection", pid, "behaviour test: the broker goes away"); err != nil {
			e.t.Logf("close_connection %s: %v", pid, err) // it may have gone already
		}
	}
	testenv.Eventually(e.t, "the closed connections to be gone", func() bool {
		live := e.connections()
		for _, pid := range pids {
			if slices.Contains(live, pid) {
				return false
			}
		}
		return true
	})
}

func (e *brokerEnv) Poisoned(consumer string) []poisoned {
	e.t.Helper()
	c := mustConsumer(e.t, e.top, consumer)
	ctx, cancel := context.WithTimeout(e.ctx, testenv.DefaultWait)
	defer cancel()
	ms, err := poison.List(ctx, e.conn, c, poison.Filter{})
	if err != nil {
		e.t.Fatalf("list %s: %v", c.PoisonQueue, err)
	}
	var out []poisoned
	for _, m := range ms {
		out = append(out, poisoned{MessageID: m.ID, Headers: m.Headers, Body: m.Body})
	}
	return out
}

// watched is a queue Idle looks at, and when it counts as busy.
type watched struct {
	name string
	// always: any message in it is work to come (a delay queue, whose
	// messages come back by themselves); otherwise only while its reader
	// was started.
	always bool
	reader string
}

// watchedQueues are the work, retry, delay-level, shard and requests queues of the
// topology; poison queues are where work ends, not work to do.
func (e *brokerEnv) watchedQueues() []watched {
	var out []watched
	for _, q := range e.top.Queues {
		switch q.Role {
		case topology.RoleRetry, topology.RoleDelay:
			out = append(out, watched{name: q.Name, always: true, reader: q.Consumer})
		case topology.RoleWork, topology.RoleShard, topology.RoleRequests:
			out = append(out, watched{name: q.Name, reader: q.Consumer})
		}
	}
	return out
}

// activity is what this process counted for the started consumers and
// responders: when it changes between two looks, deliveries are moving.
// (It cannot say by itself that nothing is in flight: a delivery whose
// ack failed with its connection ends in no count, see runtime.Event.)
func (e *brokerEnv) activity() string {
	e.mu.Lock()
	names := make([]string, 0, len(e.started))
	for n := range e.started {
		names = append(names, n)
	}
	e.mu.Unlock()
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%s%v;", n, e.conn.Counts(n))
	}
	return b.String()
}

// busy describes the messages ready in the watched queues (by passive
// declare) that are work still to come.
func (e *brokerEnv) busy(ch **amqp.Channel) []string {
	var out []string
	e.mu.Lock()
	started := make(map[string]bool, len(e.started))
	for k, v := range e.started {
		started[k] = v
	}
	e.mu.Unlock()
	for _, w := range e.watchedQueues() {
		if !w.always && !started[w.reader] {
			continue
		}
		if *ch == nil || (*ch).IsClosed() {
			c, err := e.conn.OpenChannel(e.ctx)
			if err != nil {
				out = append(out, fmt.Sprintf("no channel to look at the queues: %v", err))
				return out
			}
			*ch = c
		}
		q, err := (*ch).QueueDeclarePassive(w.name, true, false, false, false, nil)
		switch {
		case err != nil:
			out = append(out, fmt.Sprintf("queue %s: %v", w.name, err))
		case q.Messages > 0:
			out = append(out, fmt.Sprintf("queue %s: %d messages ready", w.name, q.Messages))
		}
	}
	return out
}

// unsettled asks the broker (rabbitmqctl) for the watched queues'
// unacknowledged deliveries, which a passive declare does not count:
// deliveries prefetched by a consumer, or held in place by an ordered
// one.
func (e *brokerEnv) unsettled() []string {
	out, err := e.admin.Try(nil, "-q", "list_queues", "-p", e.vhost, "name", "messages_ready", "messages_unacknowledged", "--formatter", "json")
	if err != nil {
		return []string{fmt.Sprintf("list_queues: %v", err)}
	}
	var rows []struct {
		Name    string `json:"name"`
		Ready   int    `json:"messages_ready"`
		Unacked int    `json:"messages_unacknowledged"`
	}
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		return []string{fmt.Sprintf("list_queues: %v\n%s", err, out)}
	}
	watch := map[string]bool{}
	for _, w := range e.watchedQueues() {
		watch[w.name] = true
	}
	var busy []string
	for _, r := range rows {
		if watch[r.Name] && r.Unacked > 0 {
			busy = append(busy, fmt.Sprintf("queue %s: %d deliveries not settled", r.Name, r.Unacked))
		}
	}
	return busy
}

func (e *brokerEnv) Idle() {
	e.t.Helper()
	var ch *amqp.Channel
	defer func() {
		if ch != nil {
			_ = ch.Close()
		}
	}()
	deadline := time.Now().Add(testenv.DefaultWait)
	quiet := 0 // consecutive looks that found nothing moving
	last := ""
	var busy []string
	for {
		if s := e.stoppedEarly(); len(s) > 0 {
			e.t.Fatalf("Idle: %s", strings.Join(s, "; "))
		}
		busy = e.busy(&ch)
		now := e.activity()
		if len(busy) == 0 && now == last {
			quiet++
		} else {
			quiet = 0
		}
		last = now
		// A delivery moves between the broker and this process in steps
		// that neither side sees whole (a copy on its way to its delay
		// queue, a delivery prefetched, a handler running): quiet several
		// times over, then the broker's own count of unacknowledged
		// deliveries, which a handler running or a fact waiting in place
		// keeps above zero, then quiet once more.
		if quiet >= 4 {
			if busy = e.unsettled(); len(busy) == 0 {
				if busy = e.busy(&ch); len(busy) == 0 && e.activity() == last {
					return
				}
			}
			quiet = 0
		}
		if time.Now().After(deadline) {
			if len(busy) == 0 {
				busy = []string{"deliveries keep moving: " + last}
			}
			e.t.Fatalf("Idle: still busy after %v:\n  %s", testenv.DefaultWait, strings.Join(busy, "\n  "))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// --- shared helpers ----------------------------------------------------------

func newPublisher(t testing.TB, conn *runtime.Conn, top topology.Topology) *runtime.Publisher {
	t.Helper()
	p, err := runtime.NewPublisher(conn, top.Exchanges[0].Name)
	if err != nil {
		t.Fatalf("publisher: %v", err)
	}
	return p
}

func mustConsumer(t testing.TB, top topology.Topology, name string) topology.Consumer {
	t.Helper()
	c, ok := top.Consumer(name)
	if !ok {
		t.Fatalf("no consumer %q in the topology", name)
	}
	return c
}

// call is one handler call, as the scenario's handler saw it.
type call struct {
	Consumer    string
	MessageID   string
	RoutingKey  string
	Attempt     int
	Attempts    int // the x-attempts header; -1 when absent
	Payload     any
	Err         error
	Headers     map[string]any
	Redelivered bool
}

// recorder keeps the calls of a scenario's handlers, in the order they
// returned.
type recorder struct {
	mu    sync.Mutex
	calls []call
}

func (r *recorder) add(c call) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, c)
}

// all returns the calls of consumer ("" for every consumer).
func (r *recorder) all(consumer string) []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []call
	for _, c := range r.calls {
		if consumer == "" || c.Consumer == consumer {
			out = append(out, c)
		}
	}
	return out
}

// handled returns consumer's calls that succeeded.
func (r *recorder) handled(consumer string) []call {
	var out []call
	for _, c := range r.all(consumer) {
		if c.Err == nil {
			out = append(out, c)
		}
	}
	return out
}

// route returns a runtime.Route for f on consumer whose handler is fn,
// recording each call.
func route[T any](r *recorder, consumer string, f runtime.Fact, fn func(ctx context.Context, d runtime.Delivery, v T) error) runtime.Route {
	return runtime.Handle(f, func(ctx context.Context, d runtime.Delivery, v T) error {
		err := fn(ctx, d, v)
		r.add(call{Consumer: consumer, MessageID: d.MessageID, RoutingKey: d.RoutingKey, Attempt: d.Attempt,
			Attempts: headerInt(d.Headers, runtime.HeaderAttempts), Payload: v, Err: err,
			Headers: d.Headers, Redelivered: d.Redelivered})
		return err
	})
}

func succeed[T any](context.Context, runtime.Delivery, T) error { return nil }

// deaths renders a message's x-death header as "queue reason count" per
// entry, newest first, as the broker keeps it.
func deaths(h map[string]any) []string {
	list, _ := h["x-death"].([]any)
	var out []string
	for _, e := range list {
		t, ok := e.(amqp.Table)
		if !ok {
			out = append(out, fmt.Sprintf("%T", e))
			continue
		}
		keys, _ := t["routing-keys"].([]any)
		out = append(out, fmt.Sprintf("%v %v %d via %q %v", t["queue"], t["reason"], headerInt(t, "count"), t["exchange"], keys))
	}
	return out
}
