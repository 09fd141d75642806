package main

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/urfave/cli/v2"

	"github.com/warrenbus/warren/internal/secret"
	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/poison"
)

// missingOn is how the broker commands say that queue does not exist on
// the broker at rawURL, whose URL came from (--url or WARREN_AMQP_URL).
func missingOn(t *testing.T, rawURL, queue, from string) string {
	t.Helper()
	u, err := amqp.ParseURI(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("queue %q does not exist on %s (vhost %q): declare the topology first, or is %s the broker and vhost the services use?", queue, secret.URL(rawURL), u.Vhost, from)
}

// missing is missingOn at the test's broker.
func (b *brokerCase) missing(queue, from string) string {
	b.t.Helper()
	return missingOn(b.t, b.url, queue, from)
}

// A broker command pointed at another vhost than the one the topology is
// declared in (WARREN_AMQP_URL left at another vhost, no --url) finds no
// queue there; its error names the broker and the vhost it asked, the URL
// as given with the password masked, and where the URL came from. The
// same command with --url at the right vhost finds the queue.
func TestMissingQueueNamesTheBrokerAndVhost(t *testing.T) {
	b := newBrokerCase(t, opsSchemas, opsPlaceholders...)
	mailer := b.name("mailer")
	if code, _, stderr := b.run("declare", b.dir); code != 0 {
		t.Fatalf("declare: exit %d, %s", code, stderr)
	}
	if code, stdout, stderr := b.run("replay", "--consumer", mailer, "--list", b.dir); code != 0 || stdout != fmt.Sprintf("no messages in %s.poison\n", mailer) {
		t.Fatalf("list where the topology is declared: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	wrong := testenv.VHost(t, "wrongvhost")
	t.Setenv("WARREN_AMQP_URL", wrong)
	payload := filepath.Join(t.TempDir(), "fixed.json")
	if err := os.WriteFile(payload, []byte(`{"sku":"x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	poisonQueue := mailer + ".poison"
	for _, tc := range []struct {
		name  string
		args  []string
		queue string // the queue the command finds missing first
	}{
		{"replay --list", []string{"replay", "--consumer", mailer, "--list"}, poisonQueue},
		{"replay --dry-run", []string{"replay", "--consumer", mailer, "--dry-run"}, poisonQueue},
		{"replay", []string{"replay", "--consumer", mailer}, mailer}, // the work queue the replay moves to
		{"discard", []string{"discard", "--consumer", mailer, "--all", "--reason", "test"}, poisonQueue},
		{"poison groups", []string{"poison", "groups", "--consumer", mailer}, poisonQueue},
		{"poison retry", []string{"poison", "retry", "--consumer", mailer, "--group", "3fa2b1c09e4d"}, poisonQueue},
		{"poison export", []string{"poison", "export", "--consumer", mailer, "--group", "3fa2b1c09e4d"}, poisonQueue},
		{"poison edit", []string{"poison", "edit", "--consumer", mailer, "--id", "m1", "--payload", payload}, mailer}, // the work queue the edit retries to
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := run(t, append(tc.args, b.dir)...)
			want := missingOn(t, wrong, tc.queue, "WARREN_AMQP_URL") + "\n"
			command, _, _ := strings.Cut(tc.name, " -")
			if code != 1 || !strings.HasPrefix(stderr, "warren "+command+": ") || !strings.HasSuffix(stderr, want) {
				t.Errorf("exit %d, stderr %q; want exit 1 and a line ending in %q", code, stderr, want)
			}
			if u, _ := url.Parse(wrong); u != nil {
				if pw, ok := u.User.Password(); ok && strings.Contains(stderr, ":"+pw+"@") {
					t.Errorf("the password leaked: %q", stderr)
				}
			}
		})
	}
}

// Without --url or WARREN_AMQP_URL the commands ask the development
// default, and the error says to give one.
func TestMissingQueueWithoutAURL(t *testing.T) {
	t.Setenv("WARREN_AMQP_URL", "")
	var got error
	app := &cli.App{Flags: brokerFlags(), Action: func(c *cli.Context) error {
		got = whereMissing(c, nil, fmt.Errorf("list q.poison: %w", &poison.NoQueueError{Queue: "q.poison"}))
		return nil
	}}
	if err := app.Run([]string{"warren"}); err != nil {
		t.Fatal(err)
	}
	want := `list q.poison: queue "q.poison" does not exist on amqp://guest:xxxxx@127.0.0.1:5672/ (vhost "/"): declare the topology first, or give --url (or WARREN_AMQP_URL) the broker and vhost the services use: without either, warren asks the development default`
	if got == nil || got.Error() != want {
		t.Errorf("got %v\nwant %s", got, want)
	}
	if !errorsIsNoQueue(got) {
		t.Error("the reworded error no longer matches poison.ErrNoQueue")
	}
}

func errorsIsNoQueue(err error) bool { return errors.Is(err, poison.ErrNoQueue) }
