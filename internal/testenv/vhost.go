package testenv

import (
	"errors"
	"net"
	"net/url"
	"os"
	"os/exec"
	"testing"
)

// VHost creates a RabbitMQ virtual host that belongs to one test and
// returns AMQPURL pointed at it. Generated packages declare fixed exchange
// and queue names, exactly as a service would use them; a vhost of its own
// keeps such a test apart from every other test and from a `make demo`
// running at the same time. Deleting the vhost when the test ends deletes
// everything declared in it.
//
// It needs rabbitmqctl on the machine that runs the broker: it skips
// otherwise, and fails under CI=true.
func VHost(t testing.TB, prefix string) string {
	t.Helper()
	base := AMQPURL(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("broker URL: %v", err)
	}
	ctl, err := exec.LookPath("rabbitmqctl")
	if err == nil && !isLoopback(u.Hostname()) {
		err = errRemoteBroker
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("a private vhost needs rabbitmqctl beside the broker (CI=true, so this fails rather than skips): %v", err)
		}
		t.Skipf("a private vhost needs rabbitmqctl beside the broker: %v", err)
	}
	name := Name(prefix)
	rabbitmqctl(t, ctl, "add_vhost", name)
	t.Cleanup(func() { rabbitmqctl(t, ctl, "delete_vhost", name) })
	rabbitmqctl(t, ctl, "set_permissions", "-p", name, u.User.Username(), ".*", ".*", ".*")
	u.Path, u.RawPath = "/"+name, ""
	return u.String()
}

func rabbitmqctl(t testing.TB, ctl string, args ...string) {
	t.Helper()
	if out, err := exec.Command(ctl, append([]string{"--quiet"}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("rabbitmqctl %v: %v\n%s", args, err, out)
	}
}

var errRemoteBroker = errors.New("the broker is not on this machine, where rabbitmqctl would manage it")

func isLoopback(host string) bool {
	if host == "" || host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
