package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
)

// streamSchemas has stream {{log}} of every fact, read by the stream
// consumer {{history}}, which handles the order facts and skips the stock
// ones.
var streamSchemas = map[string]string{
	"warren.json": `{
  "package": "events",
  "exchanges": {"events": "{{events}}", "retry": "{{retry}}", "dead": "{{dead}}"},
  "streams": {"{{log}}": {"bindings": ["#"], "maxAge": "1h"}},
  "consumers": {
    "{{history}}": {"bindings": ["order.#"], "stream": "{{log}}", "start": "first", "backoff": ["20ms"]}
  }
}`,
	"order/placed.json":  `{"x-routing-key": "order.placed", "type": "object", "properties": {"sku": {"type": "string"}}}`,
	"order/shipped.json": `{"x-routing-key": "order.shipped", "type": "object", "properties": {"sku": {"type": "string"}}}`,
	"stock/counted.json": `{"x-routing-key": "stock.counted", "type": "object", "properties": {"sku": {"type": "string"}}}`,
}

var streamPlaceholders = []string{"events", "retry", "dead", "log", "history"}

// streamCase declares streamSchemas' topology and publishes, in this order
// (so at these offsets): 0 order.placed a, 1 order.placed b, 2
// stock.counted s, 3 order.placed c, and, written a second after the
// returned time, 4 order.shipped a.
func streamCase(t *testing.T) (*brokerCase, int, time.Time) {
	t.Helper()
	port := testenv.StreamPort(t)
	b, since := streamCaseAt(t, []string{testenv.AMQPURL(t)}, []int{port})
	return b, port, since
}

// streamCaseAt is streamCase on the brokers at urls, whose stream ports
// are ports: the case's connection is to urls[0].
func streamCaseAt(t *testing.T, urls []string, ports []int) (*brokerCase, time.Time) {
	t.Helper()
	b := newBrokerCaseAt(t, urls[0], streamSchemas, streamPlaceholders...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	top := b.model.Topology
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: urls, StreamPorts: ports, Topology: &top, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.Close()
	pub := func(key, sku string) {
		id := key + "-" + sku
		b.publish(b.name("events"), key, amqp.Publishing{MessageId: id, ContentType: "application/json", Type: key,
			Body: fmt.Appendf(nil, `{"id":%q,"occurred_at":"2026-01-01T00:00:00Z","payload":{"sku":%q}}`, id, sku)})
	}
	pub("order.placed", "a")
	pub("order.placed", "b")
	pub("stock.counted", "s")
	pub("order.placed", "c")
	// Chunks carry the time they were written, in milliseconds: a second
	// either side keeps the clock's step out of the test.
	time.Sleep(time.Second)
	since := time.Now()
	time.Sleep(time.Second)
	pub("order.shipped", "a")
	return b, since
}

// readUnder runs consumer {{history}} with runtime.WithOffsetName(name)
// until it handled want facts, and returns the message ids it handled.
func readUnder(t *testing.T, b *brokerCase, port int, name string, want int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{b.url}, StreamPort: port, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	spec, _ := b.model.Topology.Consumer(b.name("history"))
	var mu sync.Mutex
	var ids []string
	handle := func(ctx context.Context, d runtime.Delivery, _ json.RawMessage) error {
		mu.Lock()
		defer mu.Unlock()
		ids = append(ids, d.MessageID)
		return nil
	}
	var routes []runtime.Route
	for _, key := range []string{"order.placed", "order.shipped"} {
		routes = append(routes, runtime.Handle(runtime.Fact{RoutingKey: key, Version: 1}, handle))
	}
	c, err := runtime.NewConsumer(conn, spec, routes, runtime.WithOffsetName(name))
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	testenv.Eventually(t, fmt.Sprintf("%d facts read under %s", want, name), func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(ids) >= want
	})
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(ids)
}

// warren replay --from stream positions a fresh offset name from the
// first fact, an offset or a time, bounded by --limit; --dry-run stores
// nothing; the consumer started with runtime.WithOffsetName reads exactly
// what the replay said.
func TestReplayStream(t *testing.T) {
	b, port, since := streamCase(t)
	history, log := b.name("history"), b.name("log")
	sp := strconv.Itoa(port)
	replay := func(args ...string) (int, string, string) {
		return b.run(append(append([]string{"replay", "--stream-port", sp, "--consumer", history, "--from", "stream"}, args...), b.dir)...)
	}

	t.Run("dry run from an offset with a limit", func(t *testing.T) {
		code, out, errOut := replay("--offset-name", history+".try", "--offset", "1", "--limit", "2", "--dry-run")
		want := "would read offset 1 order.placed-b order.placed (handled)\n" +
			"would read offset 2 stock.counted-s stock.counted (skipped: not " + history + "'s)\n" +
			"would read offset 3 order.placed-c order.placed (handled)\n" +
			"replay " + history + ".try would read stream " + log + " from offset 1 to offset 3 (2 facts of " + history + "); dry run, nothing changed\n"
		if code != 0 || out != want {
			t.Fatalf("exit %d\n%s\nwant\n%s\nstderr: %s", code, out, want, errOut)
		}
	})
	t.Run("dry run from a time", func(t *testing.T) {
		code, out, errOut := replay("--offset-name", history+".since", "--since", since.UTC().Format(time.RFC3339Nano), "--dry-run")
		want := "replay " + history + ".since would read stream " + log + " from offset 4 to the tail (4 now) and on; dry run, nothing changed\n"
		if code != 0 || out != want {
			t.Fatalf("exit %d\n%s\nwant\n%s\nstderr: %s", code, out, want, errOut)
		}
	})
	t.Run("from an offset with a limit", func(t *testing.T) {
		// The dry run above stored nothing: the same name is still fresh.
		code, out, errOut := replay("--offset-name", history+".try", "--offset", "1", "--limit", "2")
		if code != 0 || !strings.HasSuffix(out, "replay "+history+".try reads stream "+log+" from offset 1 to offset 3 (2 facts of "+history+"): run "+history+" with runtime.WithOffsetName(\""+history+".try\") to read it\n") {
			t.Fatalf("exit %d\n%s\nstderr: %s", code, out, errOut)
		}
		if got, want := readUnder(t, b, port, history+".try", 2), []string{"order.placed-b", "order.placed-c"}; !slices.Equal(got, want) {
			t.Fatalf("read under the replay's name: %v, want %v", got, want)
		}
		code, _, errOut = replay("--offset-name", history+".try")
		// Its reader stored where it is: the name once, then the offset.
		want := regexp.MustCompile(`^warren replay: offset name "` + regexp.QuoteMeta(history) + `\.try" holds offset \d of stream "` + regexp.QuoteMeta(log) + `": the offset name is not fresh; choose another name\n$`)
		if code != 1 || !want.MatchString(errOut) {
			t.Fatalf("a second replay under the same name: exit %d, stderr %q; want %s", code, errOut, want)
		}
	})
	t.Run("from a time", func(t *testing.T) {
		code, _, errOut := replay("--offset-name", history+".since", "--since", since.UTC().Format(time.RFC3339Nano))
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if got, want := readUnder(t, b, port, history+".since", 1), []string{"order.shipped-a"}; !slices.Equal(got, want) {
			t.Fatalf("read under the replay's name: %v, want %v", got, want)
		}
	})
	t.Run("refused on the broker", func(t *testing.T) {
		// Nothing to replay fails, as a --since in the future does: a
		// reader started under the name would read the whole stream.
		for _, dry := range [][]string{nil, {"--dry-run"}} {
			code, out, errOut := replay(append([]string{"--offset-name", history + ".late", "--offset", "99"}, dry...)...)
			if code != 1 || out != "" || errOut != "warren replay: nothing to replay: offset 99 is past the tail of stream \""+log+"\" (4); nothing stored under \""+history+".late\"\n" {
				t.Errorf("an offset past the tail %v: exit %d, stdout %q, stderr %s", dry, code, out, errOut)
			}
		}
		// The broker takes the time to its whole second: the next one
		// begins after every fact of the stream.
		next := time.Now().Truncate(time.Second).Add(time.Second)
		time.Sleep(time.Until(next) + 10*time.Millisecond)
		code, out, errOut := replay("--offset-name", history+".late", "--since", next.UTC().Format(time.RFC3339))
		if code != 1 || out != "" || !strings.HasPrefix(errOut, "warren replay: nothing to replay: stream \""+log+"\" delivered no fact at or after") {
			t.Errorf("a time after the last fact: exit %d, stdout %q, stderr %s", code, out, errOut)
		}
		// Nothing was stored under either: the late name is still fresh.
		if code, _, errOut := replay("--offset-name", history+".late", "--offset", "4", "--dry-run"); code != 0 {
			t.Errorf("the late name after a refused replay: exit %d, %s", code, errOut)
		}
	})
	t.Run("from the first fact", func(t *testing.T) {
		code, out, errOut := replay("--offset-name", history+".all")
		if code != 0 || !strings.Contains(out, "from offset 0 to the tail (4 now) and on") {
			t.Fatalf("exit %d\n%s\nstderr: %s", code, out, errOut)
		}
		want := []string{"order.placed-a", "order.placed-b", "order.placed-c", "order.shipped-a"}
		if got := readUnder(t, b, port, history+".all", 4); !slices.Equal(got, want) {
			t.Fatalf("read under the replay's name: %v, want %v", got, want)
		}
	})
}

// Refused before anything is read: flags of the poison replay, a missing
// or bad offset name, the consumer's own name, a start in the future or
// that is no time (said with --since and the forms it takes, not Go's
// layout error), a consumer that reads a queue or is not in the
// manifest: each a bad option value, exit 2.
func TestReplayStreamRefusals(t *testing.T) {
	dir := schemaDir(t, map[string]string{
		"warren.json": `{"package": "events",
  "streams": {"log": {"bindings": ["#"]}},
  "consumers": {"history": {"bindings": ["order.#"], "stream": "log"}, "mailer": {"bindings": ["order.#"]}}}`,
		"order/placed.json": `{"x-routing-key": "order.placed", "type": "object"}`,
	})
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--consumer", "history", "--from", "stream"}, 2, "expected --offset-name NAME"},
		{[]string{"--consumer", "history", "--from", "stream", "--offset-name", "Rebuild"}, 2, `offset name "Rebuild": expected lower-case words`},
		{[]string{"--consumer", "history", "--from", "stream", "--offset-name", "r", "--list"}, 2, "--list: not with --from stream"},
		{[]string{"--consumer", "history", "--from", "stream", "--offset-name", "r", "--offset", "3", "--since", "2026-01-01T00:00:00Z"}, 2, "expected one start"},
		{[]string{"--consumer", "history", "--from", "stream", "--offset-name", "r", "--since", "2999-01-01T00:00:00Z"}, 2, "in the future"},
		{[]string{"--consumer", "history", "--offset-name", "r"}, 2, "--offset-name: only with --from stream"},
		{[]string{"--consumer", "mailer", "--from", "stream", "--offset-name", "r", "--timeout", "1s"}, 2, `consumer "mailer" reads a queue, not a stream`},
		{[]string{"--consumer", "history", "--from", "stream", "--offset-name", "history"}, 2, `--offset-name: offset name "history" is the consumer's own`},
		{[]string{"--consumer", "history", "--from", "stream", "--offset-name", "r", "--since", "yesterday"}, 2,
			`warren replay: --since "yesterday": expected a time in RFC 3339, a date and a time of day with its zone: 2026-12-01T00:00:00Z (UTC), 2026-12-01T01:00:00+01:00`},
		{[]string{"--consumer", "history", "--from", "stream", "--offset-name", "r", "--since", "2026-12-01"}, 2, `--since "2026-12-01": expected a time in RFC 3339`},
		{[]string{"--consumer", "nope", "--from", "stream", "--offset-name", "r", "--timeout", "1s"}, 2, `warren replay: --consumer: consumer "nope": not in the manifest; expected one of history, mailer`},
	} {
		code, _, errOut := run(t, append(append([]string{"replay"}, tc.args...), dir)...)
		if strings.Contains(errOut, "flag -since") || strings.Contains(errOut, "cannot parse") {
			t.Errorf("replay %v: stderr %q: Go's parse error", tc.args, errOut)
		}
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("replay %v: exit %d, stderr %q; want exit %d and %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
}

// warren status shows how far each stream consumer, and each replay name
// asked for, is behind its stream's tail.
func TestStatusStreamLag(t *testing.T) {
	b, port, _ := streamCase(t)
	history, log := b.name("history"), b.name("log")
	sp := strconv.Itoa(port)
	code, out, errOut := b.run("status", "--stream-port", sp, "--format", "json", b.dir)
	var st statusJSON
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil {
		t.Fatalf("exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	// It starts at the stream's first fact: every offset, 0 to 4, is
	// its to read.
	if r := st.Streams; len(r) != 1 || r[0].Consumer != history || r[0].Stored != nil || *r[0].Tail != 4 || r[0].Lag == nil || *r[0].Lag != 5 ||
		r[0].Start != "first" || r[0].From == nil || *r[0].From != 0 {
		t.Fatalf("before the consumer ran: %s", out)
	}

	if code, _, errOut := b.run("replay", "--stream-port", sp, "--consumer", history, "--from", "stream", "--offset-name", history+".try", "--offset", "1", "--limit", "2", b.dir); code != 0 {
		t.Fatal(errOut)
	}
	// The replay's reader settles offsets 1 to 3 and stores 3.
	readUnder(t, b, port, history+".try", 2)
	testenv.Eventually(t, "the replay's stored offset in status", func() bool {
		code, out, _ := b.run("status", "--stream-port", sp, "--offset-name", history+".try", "--offset-name", "nobody", b.dir)
		return code == 0 && strings.Contains(out, history+".try (replay of "+history+")  3 ")
	})
	code, out, errOut = b.run("status", "--stream-port", sp, "--offset-name", history+".try", "--offset-name", "nobody", b.dir)
	if code != 0 {
		t.Fatal(errOut)
	}
	// Offsets 0-3 are facts, 4 the order.shipped: the tracking records of
	// the stores come after, and "last" skips them.
	lines := strings.Split(out, "\n")
	i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "STREAM") })
	if i < 0 || len(lines) < i+4 {
		t.Fatalf("no stream table:\n%s", out)
	}
	if f := strings.Fields(lines[i+1]); !slices.Equal(f, []string{log, history, "-", "4", "5", "(nothing", "stored", "yet;", "from", "offset", "0)"}) {
		t.Errorf("the consumer's row: %q\n%s", lines[i+1], out)
	}
	if f := strings.Fields(lines[i+2]); !slices.Equal(f, []string{log, history + ".try", "(replay", "of", history + ")", "3", "4", "1", "(replay", "done:", "at", "its", "bound", "3)"}) {
		t.Errorf("the replay's row: %q\n%s", lines[i+2], out)
	}
	// A name with nothing stored under it has no row: it is said so.
	if len(lines) > i+3 && strings.Contains(lines[i+3], "nobody") {
		t.Errorf("a row for a name with nothing stored: %q\n%s", lines[i+3], out)
	}
	if want := `warren status: offset name "nobody": nothing stored under it on any stream`; !strings.HasPrefix(errOut, want) {
		t.Errorf("stderr %q, want it to start %q", errOut, want)
	}
}

// The console shows each stream consumer's place in its stream in its
// row: nothing stored before it ran, every fact to read from its start,
// the first, then its stored offset at the tail.
func TestConsoleStreamLag(t *testing.T) {
	b, port, _ := streamCase(t)
	history := b.name("history")
	c := startConsole(t, b.url, b.dir, "--read-only", "--interval", "100ms", "--stream-port", strconv.Itoa(port))
	stream := func() map[string]any {
		resp, err := http.Get(c.page + "api/overview")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var o struct {
			Consumers []struct {
				Consumer string         `json:"consumer"`
				Stream   map[string]any `json:"stream"`
			} `json:"consumers"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&o); err != nil {
			t.Fatal(err)
		}
		for _, row := range o.Consumers {
			if row.Consumer == history {
				return row.Stream
			}
		}
		t.Fatalf("no row for %s", history)
		return nil
	}
	testenv.Eventually(t, "a reading with the stream's tail", func() bool { return stream()["tail"] == 4.0 })
	if s := stream(); s["stored"] != nil || s["lag"] != 5.0 || s["stream"] != b.name("log") {
		t.Fatalf("before the consumer ran: %v", s)
	}
	// Under its own name: it reads from its start, the first fact.
	readUnder(t, b, port, history, 4)
	testenv.Eventually(t, "the consumer at the tail", func() bool {
		s := stream()
		return s["stored"] == 4.0 && s["lag"] == 0.0
	})
}
