package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/internal/transport"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/topology"
)

// superStreamSchemas has super stream {{sup}} of 3 partitions, taking
// the order facts (keyed by /sku), read by the consumer group {{group}}.
var superStreamSchemas = map[string]string{
	"warren.json": `{
  "package": "events",
  "exchanges": {"events": "{{events}}", "retry": "{{retry}}", "dead": "{{dead}}"},
  "streams": {"{{sup}}": {"bindings": ["order.#"], "maxAge": "1h", "partitions": 3}},
  "consumers": {
    "{{group}}": {"bindings": ["order.#"], "stream": "{{sup}}", "start": "first", "backoff": ["20ms"]}
  }
}`,
	"order/placed.json": `{"x-routing-key": "order.placed", "x-ordering-key": "/sku", "type": "object", "required": ["sku"], "properties": {"sku": {"type": "string"}}}`,
}

// superStreamFacts is how many facts superStreamCase publishes, one per
// key, spread by the super stream's hash over its partitions.
const superStreamFacts = 12

// superStreamCase declares superStreamSchemas' topology and publishes
// superStreamFacts facts through the events exchange. On a broker without
// super streams (before RabbitMQ 3.11) it checks that warren declare
// refuses them, naming the version, and returns nil: the test has nothing
// more to run there (scripts/rabbitmq4 env points the tests at a RabbitMQ
// 4 node).
func superStreamCase(t *testing.T) (*brokerCase, int) {
	t.Helper()
	port := testenv.StreamPort(t)
	b := newBrokerCase(t, superStreamSchemas, "events", "retry", "dead", "sup", "group")
	if v := (transport.Network{Connection: b.conn}).ServerVersion(); !topology.SupportsSuperStreams(v) {
		code, _, errOut := b.run("declare", b.dir)
		if code != 1 || !strings.Contains(errOut, v) || !strings.Contains(errOut, "3.11") {
			t.Fatalf("warren declare of a super stream on RabbitMQ %s: exit %d, %s; want exit 1 naming %s and 3.11", v, code, errOut, v)
		}
		t.Logf("RabbitMQ %s has no super streams: warren declare refused them; the consumer group runs on RabbitMQ 3.11 or later", v)
		return nil, 0
	}
	if code, _, errOut := b.run("declare", b.dir); code != 0 {
		t.Fatalf("warren declare: exit %d, %s", code, errOut)
	}
	for i := range superStreamFacts {
		sku := fmt.Sprintf("k%d", i)
		b.publish(b.name("events"), "order.placed", amqp.Publishing{MessageId: "order.placed-" + sku, ContentType: "application/json", Type: "order.placed",
			Headers: amqp.Table{runtime.HeaderOrderingKey: sku, runtime.HeaderFactVersion: int64(1)},
			Body:    fmt.Appendf(nil, `{"id":"order.placed-%s","occurred_at":"2026-01-01T00:00:00Z","payload":{"sku":%q}}`, sku, sku)})
	}
	return b, port
}

// runGroup runs consumer {{group}} until it handled every fact, then stops
// it: it stores each partition's offset at the latest as it stops.
func runGroup(t *testing.T, b *brokerCase, port int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{b.url}, StreamPort: port, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	spec, _ := b.model.Topology.Consumer(b.name("group"))
	var mu sync.Mutex
	handled := map[string]bool{}
	c, err := runtime.NewConsumer(conn, spec, []runtime.Route{runtime.Handle(runtime.Fact{RoutingKey: "order.placed", Version: 1},
		func(ctx context.Context, d runtime.Delivery, _ json.RawMessage) error {
			mu.Lock()
			defer mu.Unlock()
			handled[d.MessageID] = true
			return nil
		})})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	testenv.Eventually(t, "the group handles every fact", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(handled) == superStreamFacts
	})
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// warren status shows a consumer of a super stream's lag per partition,
// where its offsets are kept (reading the super stream itself failed the
// whole command, queue table and all): a row per partition for its own
// name and for each --offset-name, in --format json with the super stream
// named; nothing stored before the group ran, each partition at its tail
// after.
func TestStatusSuperStreamLag(t *testing.T) {
	b, port := superStreamCase(t)
	if b == nil {
		return
	}
	group, sup := b.name("group"), b.name("sup")
	sp := strconv.Itoa(port)
	status := func() statusJSON {
		t.Helper()
		code, out, errOut := b.run("status", "--stream-port", sp, "--format", "json", b.dir)
		var st statusJSON
		if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil {
			t.Fatalf("exit %d, %v\n%s\n%s", code, err, out, errOut)
		}
		if len(st.Streams) != 3 {
			t.Fatalf("stream rows: %d, want one per partition\n%s", len(st.Streams), out)
		}
		for i, r := range st.Streams {
			if r.Stream != topology.PartitionStream(sup, i) || r.SuperStream != sup || r.Consumer != group || r.OffsetName != group || r.Error != "" || r.Missing {
				t.Fatalf("row %d: %+v, want partition %s of %s under %s's own name", i, r, topology.PartitionStream(sup, i), sup, group)
			}
		}
		return st
	}
	// Every fact is in one partition: the partitions' tails count them.
	facts := int64(0)
	for _, r := range status().Streams {
		if r.Stored != nil {
			t.Fatalf("before the group ran, %s has offset %d stored", r.Stream, *r.Stored)
		}
		if r.Tail != nil {
			facts += *r.Tail + 1
		}
	}
	if facts != superStreamFacts {
		t.Fatalf("the partitions' tails count %d facts, want %d", facts, superStreamFacts)
	}

	runGroup(t, b, port)
	testenv.Eventually(t, "every partition at its tail", func() bool {
		for _, r := range status().Streams {
			if r.Lag == nil || *r.Lag != 0 || (r.Tail != nil && (r.Stored == nil || *r.Stored != *r.Tail)) {
				return false
			}
		}
		return true
	})

	code, out, errOut := b.run("status", "--stream-port", sp, "--offset-name", group+".rebuild", b.dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(out, "\n")
	if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, group+" ") }) {
		t.Errorf("no queue row for %s:\n%s", group, out)
	}
	i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "STREAM") })
	if i < 0 || len(lines) < i+4 {
		t.Fatalf("no stream table of 3 rows:\n%s", out)
	}
	for p := range 3 {
		f := strings.Fields(lines[i+1+p])
		if len(f) < 5 || f[0] != topology.PartitionStream(sup, p) || f[1] != group || f[2] != f[3] || f[4] != "0" {
			t.Errorf("the group's row of partition %d: %q, want it at the partition's tail\n%s", p, lines[i+1+p], out)
		}
	}
	// Nothing is stored under the replay name on any partition: no row,
	// and stderr says so.
	if strings.Contains(out, group+".rebuild") || !strings.Contains(errOut, `offset name "`+group+`.rebuild": nothing stored under it on any stream`) {
		t.Errorf("a replay name with nothing stored: stdout\n%s\nstderr %q; want no row, and stderr saying so", out, errOut)
	}
}

// The console shows a consumer of a super stream's lag per partition in
// its row (/api/overview "stream".partitions), and their sum; before,
// reading the super stream as a stream failed every reading.
func TestConsoleSuperStreamLag(t *testing.T) {
	b, port := superStreamCase(t)
	if b == nil {
		return
	}
	group, sup := b.name("group"), b.name("sup")
	c := startConsole(t, b.url, b.dir, "--read-only", "--interval", "100ms", "--stream-port", strconv.Itoa(port))
	type place struct {
		Stream     string  `json:"stream"`
		Tail       *int64  `json:"tail"`
		Stored     *int64  `json:"stored"`
		Lag        *int64  `json:"lag"`
		Error      string  `json:"error"`
		Partitions []place `json:"partitions"`
	}
	stream := func() place {
		t.Helper()
		resp, err := http.Get(c.page + "api/overview")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var o struct {
			Error     string `json:"error"`
			Consumers []struct {
				Consumer string `json:"consumer"`
				ReadAt   *time.Time
				Stream   *place `json:"stream"`
			} `json:"consumers"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&o); err != nil {
			t.Fatal(err)
		}
		for _, row := range o.Consumers {
			if row.Consumer == group {
				if row.Stream == nil {
					t.Fatalf("no stream figures in %s's row (reading error %q)", group, o.Error)
				}
				return *row.Stream
			}
		}
		t.Fatalf("no row for %s", group)
		return place{}
	}
	testenv.Eventually(t, "a reading with the partitions", func() bool { return len(stream().Partitions) == 3 })
	s := stream()
	// The group starts from "first": before it stored anything, each
	// partition's lag is every fact the partition holds, and the super
	// stream's their sum.
	if s.Stream != sup || s.Lag == nil || *s.Lag != superStreamFacts || s.Error != "" {
		t.Fatalf("before the group ran: %+v, want super stream %s, a lag of its %d facts", s, sup, superStreamFacts)
	}
	facts := int64(0)
	for i, p := range s.Partitions {
		if p.Stream != topology.PartitionStream(sup, i) || p.Stored != nil || p.Error != "" {
			t.Fatalf("partition %d before the group ran: %+v", i, p)
		}
		if p.Tail != nil {
			facts += *p.Tail + 1
			if p.Lag == nil || *p.Lag != *p.Tail+1 {
				t.Fatalf("partition %d before the group ran: lag %v, want its %d facts", i, p.Lag, *p.Tail+1)
			}
		}
	}
	if facts != superStreamFacts {
		t.Fatalf("the partitions' tails count %d facts, want %d", facts, superStreamFacts)
	}
	runGroup(t, b, port)
	testenv.Eventually(t, "every partition at its tail, and the sum 0", func() bool {
		s := stream()
		for _, p := range s.Partitions {
			if p.Lag == nil || *p.Lag != 0 {
				return false
			}
		}
		return s.Lag != nil && *s.Lag == 0
	})
}

// The console in a real browser shows a consumer of a super stream's lag
// in its row: the sum over its partitions, then each partition's place.
func TestConsoleSuperStreamLagInTheBrowser(t *testing.T) {
	chromium, node := requireBrowser(t)
	b, port := superStreamCase(t)
	if b == nil {
		return
	}
	runGroup(t, b, port)
	console := startConsole(t, b.url, b.dir, "--read-only", "--interval", "200ms", "--stream-port", strconv.Itoa(port))
	script := exec.Command(node, "superstream.spec.mjs")
	script.Dir = browserDir
	script.Env = append(os.Environ(), "CHROMIUM="+chromium, "CONSOLE_URL="+console.page,
		"CONSUMER="+b.name("group"), "STREAM="+b.name("sup"), "PARTITIONS=3")
	out, err := script.CombinedOutput()
	t.Logf("browser:\n%s", out)
	if err != nil {
		t.Fatalf("the browser script failed: %v", err)
	}
}

// warren replay --from stream refuses a consumer of a super stream before
// it dials the broker, naming the consumer and the super stream and saying
// what to do instead: a process under a fresh offset name would join the
// consumer's group and read from its offsets.
func TestReplayStreamRefusesASuperStream(t *testing.T) {
	dir := schemaDir(t, map[string]string{
		"warren.json": `{"package": "events",
  "streams": {"orders": {"bindings": ["order.#"], "partitions": 3}},
  "consumers": {"history": {"bindings": ["order.#"], "stream": "orders"}}}`,
		"order/placed.json": `{"x-routing-key": "order.placed", "x-ordering-key": "/sku", "type": "object", "required": ["sku"], "properties": {"sku": {"type": "string"}}}`,
	})
	// Nothing answers there: a replay that dialled would say so instead.
	closed := closedPort(t)
	code, out, errOut := run(t, "replay", "--url", "amqp://guest:guest@127.0.0.1:"+closed+"/", "--consumer", "history", "--from", "stream",
		"--offset-name", "history.rebuild", "--dry-run", dir)
	for _, want := range []string{`consumer "history" reads super stream "orders"`, "consumer group", `a consumer of its own in warren.json, with "stream": "orders" and "start": "first"`} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr %q: want %q", errOut, want)
		}
	}
	if code != 2 || out != "" || strings.Contains(errOut, closed) {
		t.Errorf("exit %d, stdout %q, stderr %q: want exit 2 (a --consumer the command cannot replay), refused before dialling", code, out, errOut)
	}
}

// closedPort returns a local TCP port nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(l.Addr().String())
	_ = l.Close()
	return port
}

// A lag that cannot be read no longer hides warren status's other
// figures: the queue table and the stream table are printed, the row says
// why its lag is missing, stderr names it, and the exit status is 1
// whatever --fail-on says. A stream that does not exist is "not declared"
// and counts as missing, as a queue does.
func TestStatusShowsTheRestWhenALagFails(t *testing.T) {
	b, port, _ := streamCase(t)
	history, log := b.name("history"), b.name("log")
	closed := closedPort(t)
	code, out, errOut := b.run("status", "--stream-port", closed, "--fail-on", "none", b.dir)
	if code != 1 {
		t.Errorf("a lag not read: exit %d, want 1", code)
	}
	lines := strings.Split(out, "\n")
	if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, history+" ") && strings.Fields(l)[1] == "0" }) {
		t.Errorf("no queue row for %s:\n%s", history, out)
	}
	row := []string{log, history, "-", "-", "-", "(not", "read)"}
	if !slices.ContainsFunc(lines, func(l string) bool { return slices.Equal(strings.Fields(l), row) }) {
		t.Errorf("no stream row saying the lag was not read:\n%s", out)
	}
	if !strings.HasPrefix(errOut, "warren status: consumer "+history+`: the lag of "`+history+`" on stream "`+log+`": `) || !strings.Contains(errOut, closed) || strings.Count(errOut, "\n") != 1 {
		t.Errorf("stderr %q: want one line naming the consumer, offset name and stream, and the port it could not reach", errOut)
	}

	// The stream gone: the topology is not all declared.
	ch, err := b.conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDelete(log, false, false, false); err != nil {
		t.Fatal(err)
	}
	_ = ch.Close()
	sp := strconv.Itoa(port)
	code, out, errOut = b.run("status", "--stream-port", sp, b.dir)
	row = []string{log, history, "-", "-", "-", "(not", "declared)"}
	if code != 1 || !slices.ContainsFunc(strings.Split(out, "\n"), func(l string) bool { return slices.Equal(strings.Fields(l), row) }) ||
		!strings.Contains(errOut, "missing streams "+log) || !strings.Contains(errOut, "warren declare") {
		t.Errorf("a stream not declared: exit %d\n%s\nstderr: %s", code, out, errOut)
	}
	if code, out, errOut := b.run("status", "--stream-port", sp, "--fail-on", "none", "--format", "json", b.dir); code != 0 || !strings.Contains(out, `"missing": true`) {
		t.Errorf("a stream not declared with --fail-on none: exit %d, want 0\n%s\nstderr: %s", code, out, errOut)
	}
}

// A replay with a bound whose reader has stored nothing yet (a replay
// from the stream's first fact stores no start) shows its bound in warren
// status: before, the row said only "nothing stored yet".
func TestStatusReplayBoundBeforeItsReaderStored(t *testing.T) {
	b, port, _ := streamCase(t)
	history, log := b.name("history"), b.name("log")
	sp := strconv.Itoa(port)
	if code, _, errOut := b.run("replay", "--stream-port", sp, "--consumer", history, "--from", "stream", "--offset-name", history+".two", "--limit", "2", b.dir); code != 0 {
		t.Fatal(errOut)
	}
	code, out, errOut := b.run("status", "--stream-port", sp, "--offset-name", history+".two", b.dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := []string{log, history + ".two", "(replay", "of", history + ")", "-", "4", "-", "(nothing", "stored", "yet;", "its", "bound", "1)"}
	if !slices.ContainsFunc(strings.Split(out, "\n"), func(l string) bool { return slices.Equal(strings.Fields(l), want) }) {
		t.Errorf("no row %q:\n%s", strings.Join(want, " "), out)
	}
	// Only the bound is stored under the name: it is not fresh either.
	code, _, errOut = b.run("replay", "--stream-port", sp, "--consumer", history, "--from", "stream", "--offset-name", history+".two", "--dry-run", b.dir)
	if wantErr := `warren replay: offset name "` + history + `.two" holds a replay's bound, offset 1 of stream "` + log + `" (stored under "` + history + `.two~until"): the offset name is not fresh; choose another name` + "\n"; code != 1 || errOut != wantErr {
		t.Errorf("a replay under a name holding a bound: exit %d, stderr %q; want %q", code, errOut, wantErr)
	}
}
