package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/warrenbus/warren/internal/testenv"
)

// nobodyListens is a management API address where nothing answers: port 1
// refuses at once.
const nobodyListens = "http://guest:s3cr3t@127.0.0.1:1/"

// A management API that does not answer leaves status's tables printed:
// LIVE says it was not read, stderr says why, and the exit is 1. A
// topology with no fact in several versions does not ask it at all.
func TestStatusPrintsTheRestWhenTheManagementAPIDoesNotAnswer(t *testing.T) {
	plain := newBrokerCase(t, statusSchemas, "events", "retry", "dead", "svc", "other")
	if code, _, stderr := plain.run("declare", plain.dir); code != 0 {
		t.Fatalf("declare: exit %d, %s", code, stderr)
	}
	if code, stdout, stderr := plain.run("status", "--management-url", nobodyListens, plain.dir); code != 0 || stderr != "" || !strings.Contains(stdout, plain.name("svc")+"  ") {
		t.Errorf("no fact in several versions: exit %d, stdout:\n%s\nstderr:\n%s\nwant the management API not asked", code, stdout, stderr)
	}

	schemas := map[string]string{
		"warren.json": `{
  "package": "events",
  "exchanges": {"events": "{{events}}", "retry": "{{retry}}", "dead": "{{dead}}"},
  "versions": {"order.placed": {"publish": [1, 2]}},
  "consumers": {"{{svc}}": {"bindings": ["order.placed"]}}
}`,
		"order/placed.v1.json": `{"x-routing-key": "order.placed", "type": "object", "properties": {"id": {"type": "string"}}}`,
		"order/placed.v2.json": `{"x-routing-key": "order.placed", "x-version": 2, "type": "object", "properties": {"id": {"type": "string"}, "note": {"type": "string"}}}`,
	}
	b := newBrokerCase(t, schemas, "events", "retry", "dead", "svc")
	svc := b.name("svc")
	if code, _, stderr := b.run("declare", b.dir); code != 0 {
		t.Fatalf("declare: exit %d, %s", code, stderr)
	}
	code, stdout, stderr := b.run("status", "--management-url", nobodyListens, b.dir)
	if code != 1 {
		t.Errorf("status: exit %d, want 1", code)
	}
	for _, want := range []string{
		`(?m)^CONSUMER +WORK +CONSUMERS +RETRYING +POISON\n` + regexp.QuoteMeta(svc) + ` +0 +0 +0 +0$`,
		`(?m)^` + regexp.QuoteMeta(svc) + ` +order\.placed +1-2 +- \(not read\) +1,2$`,
		`(?m)^LIVE not read \(the management API did not answer; see stderr\): no version is called retirable without it$`,
	} {
		if !regexp.MustCompile(want).MatchString(stdout) {
			t.Errorf("stdout without %s:\n%s", want, stdout)
		}
	}
	// The schema alone would retire version 1; a live process might still
	// read it.
	if strings.Contains(stdout, "retired") {
		t.Errorf("retirement advised without the live processes:\n%s", stdout)
	}
	// The machine's broker may run without the plugin: stderr names it
	// and the command that enables it.
	if !strings.HasPrefix(stderr, "warren status: LIVE not read: management API http://127.0.0.1:1 does not answer") ||
		!strings.Contains(stderr, "rabbitmq-plugins enable rabbitmq_management") || strings.Contains(stderr, "s3cr3t") {
		t.Errorf("stderr:\n%s\nwant which reading failed and why, the plugin named, without the password", stderr)
	}

	code, stdout, _ = b.run("status", "--format", "json", "--management-url", nobodyListens, b.dir)
	var got statusJSON
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("--format json: %v\n%s", err, stdout)
	}
	if code != 1 || len(got.Consumers) != 1 || !strings.Contains(got.LiveError, "does not answer") || strings.Contains(stdout, "s3cr3t") {
		t.Errorf("--format json: exit %d, %s", code, stdout)
	}
}

// An outbox table that cannot be read leaves the rest of status printed:
// its row says it was not read, stderr says why, and the exit is 1.
func TestStatusPrintsTheRestWhenTheOutboxCannotBeRead(t *testing.T) {
	dsn := testenv.PGDSN(t)
	b := newBrokerCase(t, statusSchemas, "events", "retry", "dead", "svc", "other")
	if code, _, stderr := b.run("declare", b.dir); code != 0 {
		t.Fatalf("declare: exit %d, %s", code, stderr)
	}
	table := testenv.TableName("no_outbox") // never created
	code, stdout, stderr := b.run("status", "--outbox-dsn", dsn, "--outbox-table", table, b.dir)
	if code != 1 {
		t.Errorf("status: exit %d, want 1", code)
	}
	for _, want := range []string{
		`(?m)^` + regexp.QuoteMeta(b.name("svc")) + ` +0 +0 +0 +0$`,
		`(?m)^OUTBOX +PENDING +RETRYING +OLDEST +FAILED +SCHEDULED +NEXT DUE\n` + regexp.QuoteMeta(table) + `( +-){6} +\(not read\)$`,
	} {
		if !regexp.MustCompile(want).MatchString(stdout) {
			t.Errorf("stdout without %s:\n%s", want, stdout)
		}
	}
	if !strings.HasPrefix(stderr, fmt.Sprintf("warren status: outbox table %s not read: ", table)) || !strings.Contains(stderr, "does not exist") {
		t.Errorf("stderr:\n%s\nwant the table named and why", stderr)
	}
	code, stdout, _ = b.run("status", "--format", "json", "--outbox-dsn", dsn, "--outbox-table", table, b.dir)
	var got statusJSON
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("--format json: %v\n%s", err, stdout)
	}
	if code != 1 || got.Outbox == nil || got.Outbox.Table != table || !strings.Contains(got.Outbox.Error, "does not exist") || len(got.Consumers) != 2 {
		t.Errorf("--format json: exit %d, %s", code, stdout)
	}
}
