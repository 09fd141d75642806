package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/secret"
	"github.com/warrenbus/warren/internal/streamproto"
	"github.com/warrenbus/warren/internal/testenv"
)

func TestDeclareIsIdempotent(t *testing.T) {
	b := newBrokerCase(t, opsSchemas, opsPlaceholders...)
	want := fmt.Sprintf("declared 3 exchanges, 6 queues and 6 bindings on %s\n", secret.URL(b.url))
	for i := range 2 {
		code, stdout, stderr := b.run("declare", b.dir)
		if code != 0 || stdout != want || stderr != "" {
			t.Fatalf("declare #%d: exit %d, stdout %q, stderr %q; want %q", i+1, code, stdout, stderr, want)
		}
	}
	for _, q := range b.model.Topology.Queues {
		if !b.exists(q.Name) {
			t.Errorf("queue %s was not declared", q.Name)
		}
	}
}

// A queue that exists with other arguments is reported by name and
// argument, and the operator is told what to do.
func TestDeclareReportsMismatch(t *testing.T) {
	b := newBrokerCase(t, opsSchemas, opsPlaceholders...)
	if code, _, stderr := b.run("declare", b.dir); code != 0 {
		t.Fatalf("declare: exit %d, %s", code, stderr)
	}
	b.editManifest(`"queueType": "classic"`, `"queueType": "quorum"`)
	code, stdout, stderr := b.run("declare", b.dir)
	audit := b.name("audit")
	wantStart := fmt.Sprintf("warren declare: queue %q exists on the broker with a different x-queue-type: PRECONDITION_FAILED - inequivalent arg 'x-queue-type' for queue '%s'", audit+".poison", audit+".poison")
	if code != 1 || stdout != "" || !strings.HasPrefix(stderr, wantStart) || !strings.Contains(stderr, "\nRabbitMQ never changes the arguments of an existing queue: drain and delete it") {
		t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit 1 and a message starting %q", code, stdout, stderr, wantStart)
	}
}

// Only the named consumers' queues, and the exchanges.
func TestDeclareConsumer(t *testing.T) {
	b := newBrokerCase(t, opsSchemas, opsPlaceholders...)
	mailer, audit := b.name("mailer"), b.name("audit")
	code, stdout, stderr := b.run("declare", "--consumer", mailer, b.dir)
	if want := "declared 3 exchanges, 4 queues and 4 bindings on "; code != 0 || !strings.HasPrefix(stdout, want) {
		t.Fatalf("exit %d, stdout %q, stderr %q; want %q...", code, stdout, stderr, want)
	}
	if !b.exists(mailer) || b.exists(audit) || b.exists(audit+".poison") {
		t.Errorf("after declare --consumer %s: %s exists %v, %s exists %v", mailer, mailer, b.exists(mailer), audit, b.exists(audit))
	}
	code, _, stderr = b.run("declare", "--consumer", "nobody", b.dir)
	if code != 2 || !strings.Contains(stderr, `consumer "nobody": not in the manifest`) {
		t.Errorf("unknown consumer: exit %d, stderr %q", code, stderr)
	}
}

// Passwords never reach the output, whether the URL comes from --url or
// from WARREN_AMQP_URL, whether the broker refuses them or cannot be
// reached.
func TestDeclareRedactsPasswords(t *testing.T) {
	b := newBrokerCase(t, opsSchemas, opsPlaceholders...)
	wrong := strings.Replace(b.url, "@", "-wrong-pw-8431@", 1) // a password the broker refuses
	if wrong == b.url {
		t.Skip("the broker URL has no credentials to get wrong")
	}
	code, stdout, stderr := run(t, "declare", "--url", wrong, b.dir)
	if code != 1 || strings.Contains(stdout+stderr, "wrong-pw-8431") || !strings.Contains(stderr, "xxxxx") || !strings.Contains(stderr, "403") {
		t.Errorf("--url: exit %d, stdout %q, stderr %q; want exit 1, a refusal, the password redacted", code, stdout, stderr)
	}
	// Nothing listens on port 1: each command fails at once (declare after
	// its --timeout), naming the URL.
	t.Setenv("WARREN_AMQP_URL", "amqp://svc:s3cret-pw-8431@127.0.0.1:1/")
	for _, args := range [][]string{
		{"declare", "--timeout", "300ms"},
		{"status", "--timeout", "300ms"},
		{"replay", "--timeout", "300ms", "--list", "--consumer", b.name("mailer")},
	} {
		code, stdout, stderr := run(t, append(args, b.dir)...)
		if code != 1 || strings.Contains(stdout+stderr, "s3cret-pw-8431") || !strings.Contains(stderr, "amqp://svc:xxxxx@127.0.0.1:1/") {
			t.Errorf("%s with WARREN_AMQP_URL: exit %d, stdout %q, stderr %q; want exit 1 and the URL with its password redacted", args[0], code, stdout, stderr)
		}
	}
}

func TestDeclareUsage(t *testing.T) {
	code, stdout, _ := run(t, "declare", "--help")
	if code != 0 || !strings.Contains(stdout, "warren declare ./events") || !strings.Contains(stdout, "WARREN_AMQP_URL") {
		t.Errorf("declare --help: exit %d, missing the example or the environment variable in:\n%s", code, stdout)
	}
}

// After the manifest changes, declare reports the warren-owned queues and
// bindings it declared before and the schema directory no longer has;
// --prune deletes the empty orphaned queues, removes the orphaned bindings
// and lists the queues it kept, which later declares report again.
func TestDeclarePrunesOrphans(t *testing.T) {
	b := newBrokerCase(t, opsSchemas, opsPlaceholders...)
	mailer, audit := b.name("mailer"), b.name("audit")
	events := b.name("events")
	if code, _, stderr := b.run("declare", b.dir); code != 0 {
		t.Fatalf("declare: exit %d, %s", code, stderr)
	}
	// The new version: mailer gets another ladder and binds order.paid
	// instead of order.placed; audit is gone, with a message in its poison
	// queue.
	b.editManifest(
		`"bindings": ["order.placed"], "maxAttempts": 3, "backoff": ["20ms", "40ms"]`, `"bindings": ["order.paid"], "maxAttempts": 2, "backoff": ["30ms"]`,
		`,
    "`+audit+`": {"bindings": ["order.*"], "queueType": "classic", "maxAttempts": 1}`, ``,
	)
	if src, err := os.ReadFile(filepath.Join(b.dir, "warren.json")); err != nil || strings.Contains(string(src), audit) {
		t.Fatalf("the manifest still has %s (%v):\n%s", audit, err, src)
	}
	t.Cleanup(func() { b.deleteQueue(mailer + ".retry.30ms") })
	b.publish("", audit+".poison", amqpPoisonCopy("m-1", "order.paid", events, "boom", 1))

	orphans := []string{
		fmt.Sprintf("orphaned queue %q (consumer %q) is empty: warren declare --prune deletes it\n", audit, audit),
		fmt.Sprintf("orphaned queue %q (consumer %q) holds 1 message and has 0 consumers: kept; once it is drained and unused, warren declare --prune deletes it\n", audit+".poison", audit),
		fmt.Sprintf("orphaned queue %q (consumer %q) is empty: warren declare --prune deletes it\n", mailer+".retry.20ms", mailer),
		fmt.Sprintf("orphaned queue %q (consumer %q) is empty: warren declare --prune deletes it\n", mailer+".retry.40ms", mailer),
		fmt.Sprintf("orphaned binding %q from %q to queue %q (consumer %q): what it routes is poisoned as not handled; warren declare --prune removes it\n", "order.placed", events, mailer, mailer),
	}
	declaredLine := fmt.Sprintf("declared 3 exchanges, 3 queues and 3 bindings on %s\n", secret.URL(b.url))
	for range 2 { // reporting changes nothing
		code, stdout, stderr := b.run("declare", b.dir)
		if want := declaredLine + strings.Join(orphans, ""); code != 0 || stdout != want || stderr != "" {
			t.Fatalf("declare: exit %d, stderr %q, stdout:\n%s\nwant:\n%s", code, stderr, stdout, want)
		}
	}
	for _, q := range []string{audit, audit + ".poison", mailer + ".retry.20ms", mailer + ".retry.40ms"} {
		if !b.exists(q) {
			t.Errorf("declare without --prune deleted %s", q)
		}
	}

	code, stdout, stderr := b.run("declare", "--prune", b.dir)
	want := declaredLine +
		fmt.Sprintf("deleted orphaned queue %q (consumer %q): it was empty\n", audit, audit) +
		orphans[1] +
		fmt.Sprintf("deleted orphaned queue %q (consumer %q): it was empty\n", mailer+".retry.20ms", mailer) +
		fmt.Sprintf("deleted orphaned queue %q (consumer %q): it was empty\n", mailer+".retry.40ms", mailer) +
		fmt.Sprintf("removed orphaned binding %q from %q to queue %q (consumer %q)\n", "order.placed", events, mailer, mailer)
	if code != 0 || stdout != want || stderr != "" {
		t.Fatalf("declare --prune: exit %d, stderr %q, stdout:\n%s\nwant:\n%s", code, stderr, stdout, want)
	}
	for q, want := range map[string]bool{audit: false, audit + ".poison": true, mailer + ".retry.20ms": false, mailer + ".retry.40ms": false, mailer + ".retry.30ms": true, mailer: true} {
		if b.exists(q) != want {
			t.Errorf("after --prune: %s exists %v, want %v", q, !want, want)
		}
	}
	if n := b.depth(audit + ".poison"); n != 1 {
		t.Errorf("the kept poison queue holds %d messages, want 1", n)
	}
	// The binding is gone: order.placed no longer reaches mailer.
	b.publish(events, "order.paid", amqp.Publishing{Body: []byte(`{}`)})
	b.publish(events, "order.placed", amqp.Publishing{Body: []byte(`{}`)})
	if n := b.depth(mailer); n != 1 {
		t.Errorf("mailer's work queue holds %d messages after one order.paid and one order.placed, want 1", n)
	}

	// What was kept is still reported, and pruned once drained.
	code, stdout, _ = b.run("declare", b.dir)
	if code != 0 || stdout != declaredLine+orphans[1] {
		t.Errorf("declare after --prune: exit %d, stdout:\n%s\nwant:\n%s", code, stdout, declaredLine+orphans[1])
	}
	b.deleteQueueMessages(audit + ".poison")
	code, stdout, _ = b.run("declare", "--prune", b.dir)
	if want := declaredLine + fmt.Sprintf("deleted orphaned queue %q (consumer %q): it was empty\n", audit+".poison", audit); code != 0 || stdout != want {
		t.Errorf("declare --prune once drained: exit %d, stdout:\n%s\nwant:\n%s", code, stdout, want)
	}
	if code, stdout, _ = b.run("declare", b.dir); stdout != declaredLine {
		t.Errorf("declare with nothing orphaned: exit %d, stdout:\n%s", code, stdout)
	}
}

// The work queue of a removed consumer that still holds facts is kept, but
// --prune unbinds it: its bindings would otherwise route every new fact
// into a queue nobody reads.
func TestDeclarePruneUnbindsAnOrphanedWorkQueue(t *testing.T) {
	b := newBrokerCase(t, opsSchemas, opsPlaceholders...)
	audit, events := b.name("audit"), b.name("events")
	if code, _, stderr := b.run("declare", b.dir); code != 0 {
		t.Fatalf("declare: exit %d, %s", code, stderr)
	}
	b.editManifest(`,
    "`+audit+`": {"bindings": ["order.*"], "queueType": "classic", "maxAttempts": 1}`, ``)
	b.publish(events, "order.paid", amqp.Publishing{Body: []byte(`{}`)}) // audit binds order.*
	code, stdout, stderr := b.run("declare", "--prune", b.dir)
	want := fmt.Sprintf("declared 3 exchanges, 4 queues and 4 bindings on %s\n", secret.URL(b.url)) +
		fmt.Sprintf("orphaned queue %q (consumer %q) holds 1 message and nobody reads it: kept, and unbound so that no more facts reach it; once it is drained, warren declare --prune deletes it\n", audit, audit) +
		fmt.Sprintf("orphaned queue %q (consumer %q) is empty, but kept while the orphaned queues that feed it hold messages\n", audit+".poison", audit)
	if code != 0 || stdout != want || stderr != "" {
		t.Fatalf("declare --prune: exit %d, stderr %q, stdout:\n%s\nwant:\n%s", code, stderr, stdout, want)
	}
	b.publish(events, "order.paid", amqp.Publishing{Body: []byte(`{}`)})
	if n := b.depth(audit); n != 1 {
		t.Errorf("the unbound queue holds %d messages after another order.paid, want 1", n)
	}
}

// A stream whose retention changed is not to be deleted (its history goes
// with it): the operator is told to use a policy or a new stream.
func TestDeclareStreamRetentionMismatch(t *testing.T) {
	testenv.StreamPort(t)
	b := newBrokerCase(t, streamSchemas, streamPlaceholders...)
	if code, _, stderr := b.run("declare", b.dir); code != 0 {
		t.Fatalf("declare: exit %d, %s", code, stderr)
	}
	b.editManifest(`"maxAge": "1h"`, `"maxAge": "2h"`)
	code, _, stderr := b.run("declare", b.dir)
	wantStart := fmt.Sprintf("warren declare: queue %q exists on the broker with a different x-max-age", b.name("log"))
	if code != 1 || !strings.HasPrefix(stderr, wantStart) || !strings.Contains(stderr, "\nA stream keeps the retention it was declared with: put its declared x-max-age back in warren.json and change the retention with a policy, whose key max-age") ||
		!strings.Contains(stderr, `'{"max-age":"7200s"}'`) || strings.Contains(stderr, "delete") {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 1, a message starting %q and the advice for a stream", code, stderr, wantStart)
	}
}

// Declaring stream consumers checks the stream protocol at --stream-port,
// else $WARREN_STREAM_PORT: where nothing listens, the message asks
// whether the plugin is on and whether that is its port, in the words
// warren replay uses (the plugin is on here: the port is wrong).
func TestDeclareChecksTheStreamPortGiven(t *testing.T) {
	testenv.StreamPort(t)
	b := newBrokerCase(t, streamSchemas, streamPlaceholders...)
	for _, c := range []struct {
		args []string
		env  string
	}{{[]string{"--stream-port", "1"}, ""}, {nil, "1"}} {
		t.Setenv("WARREN_STREAM_PORT", c.env)
		code, _, stderr := b.run(append(append([]string{"declare"}, c.args...), b.dir)...)
		if code != 1 || !strings.Contains(stderr, "nothing listens at 127.0.0.1:1: "+streamproto.RefusedAdvice) || strings.Contains(stderr, "needs the RabbitMQ plugin") {
			t.Errorf("declare %v with WARREN_STREAM_PORT=%q: exit %d, stderr:\n%s\nwant exit 1 asking about the plugin and the port 1", c.args, c.env, code, stderr)
		}
	}
	t.Setenv("WARREN_STREAM_PORT", "")
	code, _, stderr := b.run("replay", "--stream-port", "1", "--consumer", b.name("history"), "--from", "stream", "--offset-name", b.name("history")+".r1", b.dir)
	if code != 1 || !strings.Contains(stderr, "127.0.0.1:1") || !strings.Contains(stderr, streamproto.RefusedAdvice) {
		t.Errorf("replay --stream-port 1: exit %d, stderr:\n%s\nwant exit 1 in declare's words", code, stderr)
	}
	if b.exists(b.name("history")) {
		t.Errorf("queue %s declared though the stream protocol did not answer", b.name("history"))
	}
}

// A removed consumer whose queues are all empty: declare says of each that
// --prune deletes it, the work and poison queues too, since --prune
// deletes the delay queues that feed them first, in the same run.
func TestDeclareReportsAnEmptyRemovedConsumer(t *testing.T) {
	b := newBrokerCase(t, opsSchemas, opsPlaceholders...)
	mailer := b.name("mailer")
	if code, _, stderr := b.run("declare", b.dir); code != 0 {
		t.Fatalf("declare: exit %d, %s", code, stderr)
	}
	b.editManifest(`"`+mailer+`": {"bindings": ["order.placed"], "maxAttempts": 3, "backoff": ["20ms", "40ms"]},`, ``)
	var reported, pruned string
	for _, q := range []string{mailer + ".retry.20ms", mailer + ".retry.40ms", mailer, mailer + ".poison"} {
		reported += fmt.Sprintf("orphaned queue %q (consumer %q) is empty: warren declare --prune deletes it\n", q, mailer)
		pruned += fmt.Sprintf("deleted orphaned queue %q (consumer %q): it was empty\n", q, mailer)
	}
	declaredLine := fmt.Sprintf("declared 3 exchanges, 2 queues and 2 bindings on %s\n", secret.URL(b.url))
	if code, stdout, stderr := b.run("declare", b.dir); code != 0 || stdout != declaredLine+reported || stderr != "" {
		t.Fatalf("declare: exit %d, stderr %q, stdout:\n%s\nwant:\n%s", code, stderr, stdout, declaredLine+reported)
	}
	if code, stdout, stderr := b.run("declare", "--prune", b.dir); code != 0 || stdout != declaredLine+pruned || stderr != "" {
		t.Fatalf("declare --prune: exit %d, stderr %q, stdout:\n%s\nwant:\n%s", code, stderr, stdout, declaredLine+pruned)
	}
}

// A broker URL that is no AMQP URL, a --timeout that leaves no time to
// connect and a malformed --management-url are wrong command lines: exit
// 2 with the usage line, before anything is dialled (nothing listens at
// port 1, so a dial would fail otherwise), naming where the URL came from,
// its password redacted.
func TestBrokerFlagsAreCheckedBeforeDialling(t *testing.T) {
	b := newBrokerCase(t, opsSchemas, opsPlaceholders...)
	const pw = "s3cret-pw-5120"
	cases := []struct {
		args []string
		env  string // WARREN_AMQP_URL
		want string // stderr's first line, after "warren COMMAND: "
	}{
		{args: []string{"--url", "http://svc:" + pw + "@127.0.0.1:1/"},
			want: `--url http://svc:xxxxx@127.0.0.1:1/: scheme "http", expected amqp or amqps`},
		{env: "amqp://svc:" + pw + " x@127.0.0.1:1/",
			want: "WARREN_AMQP_URL amqp://svc:xxxxx@127.0.0.1:1/: white space in the URL: percent-encode it (%20)"},
		// A port that is no number is named as such, not blamed on the
		// user name and password.
		{args: []string{"--url", "amqps://svc:" + pw + "@127.0.0.1:x/"},
			want: `--url amqps://svc:xxxxx@127.0.0.1:x/: not a valid URL: the port is not a number: expected a port from 1 to 65535 after the host's ":" (amqp 5672, amqps 5671), or no ":port" for the scheme's own`},
		{args: []string{"--url", "amqp://svc:" + pw + "@127.0.0.1:5672/", "--timeout", "0s"},
			want: "--timeout 0s: expected a positive duration such as 30s"},
	}
	for _, command := range [][]string{{"declare"}, {"status"}, {"replay", "--list", "--consumer", b.name("mailer")}} {
		for _, tc := range cases {
			t.Setenv("WARREN_AMQP_URL", tc.env)
			code, stdout, stderr := run(t, append(append(slices.Clone(command), tc.args...), b.dir)...)
			prefix := "warren " + command[0] + ": " + tc.want + "\nusage: warren " + command[0] + " "
			if code != 2 || !strings.HasPrefix(stderr, prefix) || strings.Contains(stdout+stderr, pw) {
				t.Errorf("%s %q (WARREN_AMQP_URL %q): exit %d, stdout %q, stderr %q; want exit 2 and stderr beginning %q", command[0], tc.args, tc.env, code, stdout, stderr, prefix)
			}
		}
	}
	t.Setenv("WARREN_AMQP_URL", "")
	code, _, stderr := run(t, "status", "--url", "amqp://svc:"+pw+"@127.0.0.1:1/", "--management-url", "ftp://svc:"+pw+"@127.0.0.1:15672/", b.dir)
	if want := "warren status: --management-url ftp://svc:xxxxx@127.0.0.1:15672/: expected http:// or https:// and a host, like http://127.0.0.1:15672/\nusage: warren status "; code != 2 || !strings.HasPrefix(stderr, want) || strings.Contains(stderr, pw) {
		t.Errorf("status --management-url ftp://...: exit %d, stderr %q; want exit 2 and stderr beginning %q", code, stderr, want)
	}
}
