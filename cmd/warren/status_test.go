package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/secret"
	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/topology"
)

// statusSchemas has a consumer with a long ladder, so that a message put
// in a delay queue stays there while the test looks, and a second one.
var statusSchemas = map[string]string{
	"warren.json": `{
  "package": "events",
  "exchanges": {"events": "{{events}}", "retry": "{{retry}}", "dead": "{{dead}}"},
  "consumers": {
    "{{svc}}": {"bindings": ["order.placed"], "maxAttempts": 3, "backoff": ["1m", "1h"]},
    "{{other}}": {"bindings": ["order.placed"], "maxAttempts": 1}
  }
}`,
	"order/placed.json": `{"x-routing-key": "order.placed", "type": "object"}`,
}

// fields splits the text table into the cells of each line.
func fields(table string) [][]string {
	var out [][]string
	for _, line := range strings.Split(strings.TrimSuffix(table, "\n"), "\n") {
		out = append(out, strings.Fields(line))
	}
	return out
}

func TestStatus(t *testing.T) {
	b := newBrokerCase(t, statusSchemas, "events", "retry", "dead", "svc", "other")
	svc, other := b.name("svc"), b.name("other")

	// Nothing declared: exit 1, and the reason.
	code, stdout, stderr := b.run("status", b.dir)
	if code != 1 || !strings.Contains(stderr, fmt.Sprintf("warren status: consumer %s: missing queues %s, %s.retry.1m, %s.retry.1h, %s.poison on ", svc, svc, svc, svc, svc)) ||
		!strings.HasSuffix(stderr, "warren status: the topology is not declared; run warren declare "+b.dir+"\n") {
		t.Errorf("undeclared: exit %d, stderr:\n%s", code, stderr)
	}
	if want := [][]string{{"CONSUMER", "WORK", "CONSUMERS", "RETRYING", "POISON"}, {other, "-", "-", "-", "-", "(not declared)"}, {svc, "-", "-", "-", "-", "(not declared)"}}; fmt.Sprint(fields(stdout)) != fmt.Sprint(want) {
		t.Errorf("undeclared: table\n%s\nwant rows %v", stdout, want)
	}

	if code, _, stderr := b.run("declare", "--consumer", svc, b.dir); code != 0 {
		t.Fatalf("declare: exit %d, %s", code, stderr)
	}
	// Two facts, one of them held by a consumer that never acks; a retry
	// copy waiting an hour; a poison copy.
	ch, err := b.conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if err := ch.Qos(1, 0, false); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.Consume(svc, "", false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	b.publish(b.name("events"), "order.placed", amqp.Publishing{Body: []byte("{}")})
	b.publish(b.name("events"), "order.placed", amqp.Publishing{Body: []byte("{}")})
	b.publish(b.name("retry"), svc+".retry.1h", amqp.Publishing{Body: []byte("{}")})
	b.publish(b.name("dead"), svc, amqp.Publishing{Body: []byte("{}")})

	wantRow := []string{svc, "1", "1", "1", "(1h:1)", "1"}
	testenv.Eventually(t, "status to show the messages", func() bool {
		_, stdout, _ = b.run("status", b.dir)
		rows := fields(stdout)
		return len(rows) == 3 && fmt.Sprint(rows[2]) == fmt.Sprint(wantRow)
	})
	// The other consumer is still not declared, so the answer is still 1.
	code, stdout, stderr = b.run("status", b.dir)
	if code != 1 || !strings.Contains(stdout, other+"  ") || strings.Contains(stderr, "consumer "+svc) {
		t.Errorf("half declared: exit %d, stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	lines := strings.Split(stdout, "\n")
	if col := strings.Index(lines[0], "POISON"); col < 0 || len(lines[2]) <= col || lines[2][col] != '1' {
		t.Errorf("columns are not aligned:\n%s", stdout)
	}

	code, stdout, _ = b.run("status", "--format", "json", b.dir)
	var got statusJSON
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("--format json: %v\n%s", err, stdout)
	}
	if code != 1 || got.Broker != secret.URL(b.url) || len(got.Consumers) != 2 {
		t.Fatalf("--format json: exit %d, %+v", code, got)
	}
	s := got.Consumers[1]
	if s.Consumer != svc || s.Work != 1 || s.Consumers != 1 || s.Retrying != 1 || s.Poison != 1 || len(s.Missing) != 0 ||
		fmt.Sprint(s.Tiers) != fmt.Sprintf("[{%s.retry.1m 1m 0} {%s.retry.1h 1h 1}]", svc, svc) {
		t.Errorf("--format json: %s = %+v", svc, s)
	}
	if o := got.Consumers[0]; o.Consumer != other || len(o.Missing) != 2 {
		t.Errorf("--format json: %s = %+v; want its 2 queues missing", other, o)
	}

	if code, _, _ := b.run("declare", b.dir); code != 0 {
		t.Fatal("declare failed")
	}
	if code, _, stderr := b.run("status", b.dir); code != 0 || stderr != "" {
		t.Errorf("declared: exit %d, stderr %q", code, stderr)
	}
}

func TestStatusUsage(t *testing.T) {
	code, stdout, _ := run(t, "status", "--help")
	if code != 0 || !strings.Contains(stdout, "warren status ./events") {
		t.Errorf("status --help: exit %d, no example in:\n%s", code, stdout)
	}
	if code, _, stderr := run(t, "status", "--format", "xml", "dir"); code != 2 || !strings.HasPrefix(stderr, "warren status: --format \"xml\": expected text or json\nusage: warren status ") {
		t.Errorf("--format xml: exit %d, stderr %q", code, stderr)
	}
}

// --fail-on turns what the table shows into an exit status an alert can
// use: a poison message, and work that no consumer is taking.
func TestStatusFailOn(t *testing.T) {
	b := newBrokerCase(t, statusSchemas, "events", "retry", "dead", "svc", "other")
	svc, other := b.name("svc"), b.name("other")
	if code, _, stderr := b.run("declare", b.dir); code != 0 {
		t.Fatalf("declare: exit %d, %s", code, stderr)
	}
	all := "missing,poison,idle"
	if code, _, stderr := b.run("status", "--fail-on", all, b.dir); code != 0 || stderr != "" {
		t.Fatalf("empty queues: exit %d, stderr %q", code, stderr)
	}

	// A poison message for svc; a fact in both work queues, and a consumer
	// on other's only.
	ch, err := b.conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if err := ch.Qos(1, 0, false); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.Consume(other, "", false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	b.publish(b.name("dead"), svc, amqp.Publishing{Body: []byte("{}")})
	b.publish(b.name("events"), "order.placed", amqp.Publishing{Body: []byte("{}")})
	b.publish(b.name("events"), "order.placed", amqp.Publishing{Body: []byte("{}")})
	testenv.Eventually(t, "the messages to arrive", func() bool {
		return b.depth(svc+".poison") == 1 && b.depth(svc) == 2 && b.depth(other) == 1
	})

	poisonLine := fmt.Sprintf("warren status: consumer %s: 1 message in its poison queue; see warren replay --consumer %s --list %s\n", svc, svc, b.dir)
	idleLine := fmt.Sprintf("warren status: consumer %s: 2 messages waiting and no consumer attached\n", svc)
	cases := []struct {
		failOn     string
		code       int
		wantStderr string
	}{
		{"missing", 0, ""}, // the default: everything is declared
		{"poison", 1, poisonLine},
		{"idle", 1, idleLine},
		{all, 1, poisonLine + idleLine},
		{"none", 0, ""},
	}
	for _, c := range cases {
		code, _, stderr := b.run("status", "--fail-on", c.failOn, b.dir)
		if code != c.code || stderr != c.wantStderr {
			t.Errorf("--fail-on %s: exit %d, stderr %q; want %d, %q", c.failOn, code, stderr, c.code, c.wantStderr)
		}
	}
	// Without the option, the default (missing) holds.
	if code, _, stderr := b.run("status", b.dir); code != 0 || stderr != "" {
		t.Errorf("default: exit %d, stderr %q", code, stderr)
	}
	// other has a consumer holding its one message: not idle.
	code, stdout, _ := b.run("status", "--fail-on", "idle", "--format", "json", b.dir)
	if code != 1 || !strings.Contains(stdout, `"consumer": "`+other+`"`) {
		t.Errorf("--format json --fail-on idle: exit %d, stdout:\n%s", code, stdout)
	}
	if code, _, stderr := run(t, "status", "--fail-on", "poison,slow", b.dir); code != 2 || !strings.HasPrefix(stderr, `warren status: --fail-on "poison,slow": expected a comma-separated list of missing, poison, idle, unroutable, lag, or none`) {
		t.Errorf("unknown condition: exit %d, stderr %q", code, stderr)
	}
}

// statusDelayedSchemas publishes facts for later.
var statusDelayedSchemas = map[string]string{
	"warren.json": `{
  "package": "events",
  "delayedFacts": true,
  "exchanges": {"events": "{{events}}", "retry": "{{retry}}", "dead": "{{dead}}"},
  "consumers": {"{{svc}}": {"bindings": ["order.placed"]}}
}`,
	"order/placed.json": `{"x-routing-key": "order.placed", "type": "object"}`,
}

func TestStatusDelayed(t *testing.T) {
	b := newBrokerCase(t, statusDelayedSchemas, "events", "retry", "dead", "svc")
	events := b.name("events")
	code, stdout, stderr := b.run("status", b.dir)
	if code != 1 || !strings.Contains(stderr, "warren status: delay levels: missing 37 queues, "+events+".delay.35 to "+events+".delay.unroutable on ") ||
		!regexp.MustCompile(`DELAYED +NEXT DUE WITHIN +UNROUTABLE\n- +- +- +\(not declared\)\n`).MatchString(stdout) {
		t.Errorf("undeclared: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if code, _, stderr := b.run("declare", b.dir); code != 0 {
		t.Fatalf("declare: exit %d, %s", code, stderr)
	}
	// A fact due in two hours waits in the level that holds 2^22 ms; one
	// that fell due with no consumer bound waits in the unroutable lane.
	key, err := topology.DelayedRoutingKey("order.placed")
	if err != nil {
		t.Fatal(err)
	}
	h := amqp.Table{}
	if _, err := topology.SetDelayHeaders(h, 2*time.Hour); err != nil {
		t.Fatal(err)
	}
	b.publish(topology.DelayExchange(events, topology.DelayLevels-1), key, amqp.Publishing{Headers: h, Body: []byte("{}")})
	b.publish("", topology.UnroutableQueue(events), amqp.Publishing{Body: []byte("{}")})
	hold := topology.FormatDelay(time.Duration(1<<22) * time.Millisecond)
	testenv.Eventually(t, "status to show the delayed fact", func() bool {
		_, stdout, _ = b.run("status", b.dir)
		// Level 22 is the lowest holding a fact: it is due within twice
		// what that level holds (2^23 ms).
		return strings.Contains(stdout, "1 ("+hold+":1)  2h19m49s         1\n")
	})
	if code, _, stderr := b.run("status", b.dir); code != 0 {
		t.Errorf("declared, default --fail-on: exit %d, %s", code, stderr)
	}
	code, _, stderr = b.run("status", "--fail-on", "unroutable", b.dir)
	if code != 1 || !strings.Contains(stderr, "1 delayed fact fell due with no consumer bound") {
		t.Errorf("--fail-on unroutable: exit %d, stderr %q", code, stderr)
	}
	code, stdout, _ = b.run("status", "--format", "json", b.dir)
	var got statusJSON
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || code != 0 || got.Delayed == nil {
		t.Fatalf("--format json: exit %d, %v\n%s", code, err, stdout)
	}
	if d := got.Delayed; d.Waiting != 1 || d.Unroutable != 1 || len(d.Levels) != 1 || d.Levels[0].Queue != events+".delay.22" || d.NextDueWithin != "2h19m49s" || len(d.Missing) != 0 {
		t.Errorf("--format json: delayed = %+v", d)
	}
}

// TestStatusShowsTheOutbox: with --outbox-dsn, status adds the outbox
// table's figures, its scheduled facts and the next due time among them,
// in text and JSON; a DSN it cannot use is a usage error that shows no
// password.
func TestStatusShowsTheOutbox(t *testing.T) {
	b := newBrokerCase(t, statusDelayedSchemas, "events", "retry", "dead", "svc")
	if code, _, stderr := b.run("declare", b.dir); code != 0 {
		t.Fatalf("declare: exit %d, %s", code, stderr)
	}
	dsn, _ := outboxFile(t)
	db, ob := openSQLiteOutbox(t, strings.TrimPrefix(dsn, "sqlite:"))
	due := time.Now().Add(3 * time.Hour).UTC().Truncate(time.Millisecond)
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ob.At(due).Write(context.Background(), tx, runtime.Fact{RoutingKey: "order.placed"}, map[string]int{"n": 1}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}

	code, stdout, stderr := b.run("status", "--outbox-dsn", dsn, b.dir)
	if code != 0 || !regexp.MustCompile(`OUTBOX +PENDING +RETRYING +OLDEST +FAILED +SCHEDULED +NEXT DUE\nwarren_outbox +2 +1 +\d+s +1 +1 +`+regexp.QuoteMeta(due.Format(time.RFC3339))+` \(in (2h59m5\ds|3h0m0s)\)\n`).MatchString(stdout) {
		t.Errorf("status --outbox-dsn: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	code, stdout, _ = b.run("status", "--format", "json", "--outbox-dsn", dsn, b.dir)
	var got statusJSON
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || code != 0 || got.Outbox == nil {
		t.Fatalf("--format json: exit %d, %v\n%s", code, err, stdout)
	}
	if o := got.Outbox; o.Table != "warren_outbox" || o.Pending != 2 || o.Failed != 1 || o.Scheduled != 1 || o.NextDue == nil || !o.NextDue.Equal(due) || o.OldestPending == nil {
		t.Errorf("--format json: outbox = %+v", o)
	}
	code, _, stderr = b.run("status", "--outbox-dsn", "mysql://root:s3cr3t@db/shop", b.dir)
	if code != 2 || !strings.Contains(stderr, "--outbox-dsn") || strings.Contains(stderr, "s3cr3t") {
		t.Errorf("status with a mysql outbox DSN: exit %d, %q; want a usage error without the password", code, stderr)
	}
}

// With a fact in several versions, status shows which versions each
// consumer reads beside those the publisher publishes.
func TestStatusShowsVersionsPerConsumer(t *testing.T) {
	schemas := map[string]string{
		"warren.json": `{
  "package": "events",
  "exchanges": {"events": "{{events}}", "retry": "{{retry}}", "dead": "{{dead}}"},
  "versions": {"order.placed": {"publish": [1, 2]}},
  "consumers": {
    "{{svc}}": {"bindings": ["order.placed"]},
    "{{other}}": {"bindings": ["order.placed"], "versions": {"order.placed": 1}}
  }
}`,
		"order/placed.v1.json": `{"x-routing-key": "order.placed", "type": "object", "properties": {"id": {"type": "string"}}}`,
		"order/placed.v2.json": `{"x-routing-key": "order.placed", "x-version": 2, "type": "object", "properties": {"id": {"type": "string"}, "note": {"type": "string"}}}`,
	}
	b := newBrokerCase(t, schemas, "events", "retry", "dead", "svc", "other")
	svc, other := b.name("svc"), b.name("other")
	if code, _, stderr := b.run("declare", b.dir); code != 0 {
		t.Fatalf("declare: exit %d, %s", code, stderr)
	}
	code, stdout, stderr := b.run("status", b.dir)
	if code != 0 {
		t.Fatalf("status: exit %d, %s", code, stderr)
	}
	table := stdout[strings.Index(stdout, "\n\n")+2:]
	want := [][]string{{"CONSUMER", "FACT", "READS", "LIVE", "PUBLISHED"}, {other, "order.placed", "1", "-", "1,2"}, {svc, "order.placed", "1-2", "-", "1,2"}}
	if got := fields(table); len(got) < 3 || fmt.Sprint(got[:3]) != fmt.Sprint(want) {
		t.Errorf("versions table\n%s\nwant rows %v", stdout, want)
	}
	// other reads version 1 alone, so version 1 stays; without the
	// management API the table says where LIVE would come from.
	for _, line := range []string{"order.placed: every published version is still needed\n", "LIVE needs --management-url"} {
		if !strings.Contains(table, line) {
			t.Errorf("versions table without %q:\n%s", line, table)
		}
	}
	_, stdout, _ = b.run("status", "--format", "json", b.dir)
	var got statusJSON
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	if r := got.Consumers[1].Reads; len(r) != 1 || fmt.Sprint(r[0].Schema) != "[1 2]" || fmt.Sprint(r[0].Published) != "[1 2]" || r[0].Asked {
		t.Errorf("--format json reads of %s: %+v", svc, r)
	}
}

// A batch consumer's row says its batch, in the table and in JSON.
func TestStatusShowsABatchConsumer(t *testing.T) {
	b := newBrokerCase(t, map[string]string{
		"warren.json": `{
  "package": "events",
  "exchanges": {"events": "{{events}}", "retry": "{{retry}}", "dead": "{{dead}}"},
  "consumers": {"{{svc}}": {"bindings": ["order.placed"], "maxAttempts": 1, "batch": {"size": 5, "wait": "100ms"}}}
}`,
		"order/placed.json": `{"x-routing-key": "order.placed", "type": "object"}`,
	}, "events", "retry", "dead", "svc")
	svc := b.name("svc")
	if code, _, stderr := b.run("declare", b.dir); code != 0 {
		t.Fatalf("declare: exit %d, %s", code, stderr)
	}
	code, stdout, stderr := b.run("status", b.dir)
	if code != 0 || !strings.Contains(stdout, svc+" (batches of 5, 100ms)  ") {
		t.Errorf("status: exit %d, stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	_, stdout, _ = b.run("status", "--format", "json", b.dir)
	var got statusJSON
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("--format json: %v\n%s", err, stdout)
	}
	if len(got.Consumers) != 1 || got.Consumers[0].Batch == nil || *got.Consumers[0].Batch != (batchStatus{Size: 5, Wait: "100ms"}) {
		t.Errorf("--format json: %s", stdout)
	}
}
