package testenv

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
)

// VHost creates a RabbitMQ virtual host that belongs to one test and
// returns AMQPURL pointed at it. Generated packages declare fixed exchange
// and queue names, exactly as a service would use them; a vhost of its own
// keeps such a test apart from every other test and from a `make demo`
// running at the same time. Deleting the vhost when the test ends deletes
// everything declared in it.
//
// It administers the broker through [BrokerAdmin]: it skips without a way
// to, and fails under CI=true.
func VHost(t testing.TB, prefix string) string {
	t.Helper()
	base := AMQPURL(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("broker URL: %v", err)
	}
	admin := BrokerAdmin(t)
	name := Name(prefix)
	// The vhost and the test user's permissions in one rabbitmqctl command
	// (import_definitions, of these two alone), rather than add_vhost and
	// set_permissions: each command starts an Erlang node of its own, which
	// costs about a second of CPU, and many tests make a vhost.
	defs, err := json.Marshal(map[string]any{
		"vhosts": []map[string]string{{"name": name}},
		"permissions": []map[string]string{{
			"user": u.User.Username(), "vhost": name, "configure": ".*", "write": ".*", "read": ".*",
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Try(strings.NewReader(string(defs)), "--quiet", "import_definitions"); err != nil {
		_, _ = admin.Try(nil, "--quiet", "delete_vhost", name) // in case the vhost was made without its permissions
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := admin.Try(nil, "--quiet", "delete_vhost", name); err != nil {
			t.Errorf("delete vhost %s: %v", name, err)
		}
	})
	u.Path, u.RawPath = "/"+name, ""
	vhostURL := u.String()
	// The command returns once the definitions are applied; should a
	// broker apply them in the background, the test waits until it may use
	// the vhost.
	Eventually(t, "vhost "+name+" to accept the test's user", func() bool {
		c, err := amqp.Dial(vhostURL)
		if err == nil {
			_ = c.Close()
		}
		return err == nil
	})
	return vhostURL
}
