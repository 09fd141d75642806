package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/testenv"
)

// startsSchemas has one stream, {{starts-log}}, read by a consumer of each
// start: the stream's first fact, "next", an offset, a time before the
// stream's facts, and an offset past them.
var startsSchemas = map[string]string{
	"warren.json": `{
  "package": "events",
  "exchanges": {"events": "{{events}}", "retry": "{{retry}}", "dead": "{{dead}}"},
  "streams": {"{{starts-log}}": {"bindings": ["#"], "maxAge": "1h"}},
  "consumers": {
    "{{from-first}}": {"bindings": ["order.#"], "stream": "{{starts-log}}", "start": "first", "backoff": ["20ms"]},
    "{{from-next}}": {"bindings": ["order.#"], "stream": "{{starts-log}}", "start": "next", "backoff": ["20ms"]},
    "{{from-offset}}": {"bindings": ["order.#"], "stream": "{{starts-log}}", "start": 1, "backoff": ["20ms"]},
    "{{from-past}}": {"bindings": ["order.#"], "stream": "{{starts-log}}", "start": "2020-01-01T00:00:00Z", "backoff": ["20ms"]},
    "{{from-later}}": {"bindings": ["order.#"], "stream": "{{starts-log}}", "start": 10, "backoff": ["20ms"]}
  }
}`,
	"order/placed.json": `{"x-routing-key": "order.placed", "type": "object", "properties": {"sku": {"type": "string"}}}`,
}

// startsCase declares startsSchemas and writes three facts to the stream
// (offsets 0 to 2), with no consumer run: none has stored anything.
func startsCase(t *testing.T) (*brokerCase, string) {
	t.Helper()
	sp := strconv.Itoa(testenv.StreamPort(t))
	b := newBrokerCase(t, startsSchemas, "events", "retry", "dead", "starts-log", "from-first", "from-next", "from-offset", "from-past", "from-later")
	if code, _, errOut := b.run("declare", "--stream-port", sp, b.dir); code != 0 {
		t.Fatal(errOut)
	}
	for i := range 3 {
		id := fmt.Sprintf("order.placed-%d", i)
		b.publish(b.name("events"), "order.placed", amqp.Publishing{MessageId: id, ContentType: "application/json", Type: "order.placed",
			Body: fmt.Appendf(nil, `{"id":%q,"occurred_at":"2026-01-01T00:00:00Z","payload":{"sku":"a"}}`, id)})
	}
	return b, sp
}

// A stream consumer that has stored nothing yet is behind by what it will
// read: from the stream's first fact, its offset or its time, up to the
// tail. A "next" not fixed yet (the consumer never started) has no lag to
// tell, and says why.
func TestStatusLagBeforeAnythingIsStored(t *testing.T) {
	b, sp := startsCase(t)
	code, out, errOut := b.run("status", "--stream-port", sp, "--format", "json", b.dir)
	var st statusJSON
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil {
		t.Fatalf("exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	type want struct {
		start string
		from  string // "" for absent
		lag   string // "null" for not known
	}
	wants := map[string]want{
		b.name("from-first"):  {"first", "0", "3"},
		b.name("from-next"):   {"next", "", "null"},
		b.name("from-offset"): {"offset 1", "1", "2"},
		b.name("from-past"):   {"2020-01-01T00:00:00Z", "0", "3"},
		// Past the tail: it waits for the stream to reach offset 10.
		b.name("from-later"): {"offset 10", "10", "0"},
	}
	text := func(n *int64) string {
		if n == nil {
			return "null"
		}
		return strconv.FormatInt(*n, 10)
	}
	for _, r := range st.Streams {
		w, ok := wants[r.Consumer]
		if !ok {
			t.Errorf("row of %q: %+v", r.Consumer, r)
			continue
		}
		delete(wants, r.Consumer)
		from := text(r.From)
		if r.From == nil {
			from = ""
		}
		if r.Start != w.start || from != w.from || text(r.Lag) != w.lag || text(r.Stored) != "null" || text(r.Tail) != "2" {
			t.Errorf("%s: start %q, from %q, lag %s, stored %s, tail %s; want start %q, from %q, lag %s, nothing stored, tail 2",
				r.Consumer, r.Start, from, text(r.Lag), text(r.Stored), text(r.Tail), w.start, w.from, w.lag)
		}
	}
	if len(wants) > 0 {
		t.Errorf("no row for %v\n%s", wants, out)
	}

	code, out, errOut = b.run("status", "--stream-port", sp, b.dir)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	log := regexp.QuoteMeta(b.name("starts-log"))
	for _, line := range []string{
		log + ` +` + regexp.QuoteMeta(b.name("from-first")) + ` +- +2 +3 \(nothing stored yet; from offset 0\)`,
		log + ` +` + regexp.QuoteMeta(b.name("from-offset")) + ` +- +2 +2 \(nothing stored yet; from offset 1\)`,
		log + ` +` + regexp.QuoteMeta(b.name("from-next")) + ` +- +2 +- \(nothing stored yet; "next" is fixed at its first start\)`,
	} {
		if !regexp.MustCompile(`(?m)^` + line + `$`).MatchString(out) {
			t.Errorf("stdout without %s:\n%s", line, out)
		}
	}
}

// --fail-on lag fails on each stream consumer more than --max-lag offsets
// behind, named on stderr with its lag and stream; a lag not known (a
// "next" never started) does not count. --max-lag is refused without it.
func TestStatusFailOnLag(t *testing.T) {
	b, sp := startsCase(t)
	// The default limit is far above three facts.
	if code, out, errOut := b.run("status", "--stream-port", sp, "--fail-on", "missing,lag", b.dir); code != 0 || errOut != "" {
		t.Errorf("--fail-on lag, default --max-lag: exit %d, stderr %q\n%s", code, errOut, out)
	}
	line := func(consumer string, lag int) string {
		return fmt.Sprintf("warren status: consumer %s: %d offsets behind the tail of stream %s, more than --max-lag 2\n", b.name(consumer), lag, b.name("starts-log"))
	}
	want := line("from-first", 3) + line("from-past", 3)
	code, out, errOut := b.run("status", "--stream-port", sp, "--fail-on", "lag", "--max-lag", "2", b.dir)
	if code != 1 || errOut != want {
		t.Errorf("--max-lag 2: exit %d, stderr:\n%s\nwant exit 1, stderr:\n%s\nstdout:\n%s", code, errOut, want, out)
	}
	code, out, errOut = b.run("status", "--stream-port", sp, "--fail-on", "lag", "--max-lag", "2", "--format", "json", b.dir)
	var st statusJSON
	if err := json.Unmarshal([]byte(out), &st); err != nil || code != 1 || errOut != want || len(st.Streams) != 5 {
		t.Errorf("--format json --max-lag 2: exit %d, %v, stderr:\n%s\nstdout:\n%s", code, err, errOut, out)
	}
	if code, _, errOut := b.run("status", "--stream-port", sp, "--fail-on", "lag", "--max-lag", "3", b.dir); code != 0 || errOut != "" {
		t.Errorf("--max-lag 3 (a lag of 3 is not more): exit %d, stderr %q", code, errOut)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-lag", "2"}, "warren status: --max-lag is the limit of --fail-on lag: add lag to --fail-on"},
		{[]string{"--fail-on", "lag", "--max-lag", "-1"}, "warren status: --max-lag -1: expected 0 or more offsets"},
	} {
		args := append(append([]string{"status"}, c.args...), b.dir)
		if code, _, errOut := run(t, args...); code != 2 || !strings.HasPrefix(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2, %q", c.args, code, errOut, c.want)
		}
	}
}
