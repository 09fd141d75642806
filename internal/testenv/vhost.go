package testenv

import (
	"net/url"
	"testing"
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
	admin.Run(t, "--quiet", "add_vhost", name)
	t.Cleanup(func() {
		if _, err := admin.Try(nil, "--quiet", "delete_vhost", name); err != nil {
			t.Errorf("delete vhost %s: %v", name, err)
		}
	})
	admin.Run(t, "--quiet", "set_permissions", "-p", name, u.User.Username(), ".*", ".*", ".*")
	u.Path, u.RawPath = "/"+name, ""
	return u.String()
}
