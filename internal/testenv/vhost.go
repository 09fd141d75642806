package testenv

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
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
	return VHosts(t, prefix, 1)[0]
}

// VHosts is [VHost] for a test with n cases that each need a vhost of
// their own: it creates them together and deletes them together when t
// ends. Every rabbitmqctl command starts an Erlang node of its own, which
// costs about a second of CPU; VHosts takes one command to create n vhosts
// and one to delete them, where n calls of VHost take 2n.
func VHosts(t testing.TB, prefix string, n int) []string {
	t.Helper()
	base := AMQPURL(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("broker URL: %v", err)
	}
	admin := BrokerAdmin(t)
	// The vhosts and the test user's permissions on them, in one
	// import_definitions of these alone.
	type permission struct {
		User      string `json:"user"`
		VHost     string `json:"vhost"`
		Configure string `json:"configure"`
		Write     string `json:"write"`
		Read      string `json:"read"`
	}
	var defs struct {
		VHosts      []map[string]string `json:"vhosts"`
		Permissions []permission        `json:"permissions"`
	}
	names := make([]string, n)
	for i := range names {
		names[i] = Name(prefix)
		defs.VHosts = append(defs.VHosts, map[string]string{"name": names[i]})
		defs.Permissions = append(defs.Permissions, permission{u.User.Username(), names[i], ".*", ".*", ".*"})
	}
	body, err := json.Marshal(defs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Try(strings.NewReader(string(body)), "--quiet", "import_definitions"); err != nil {
		_ = deleteVHosts(admin, names) // those made before the command failed
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := deleteVHosts(admin, names); err != nil {
			t.Error(err)
		}
	})
	urls := make([]string, n)
	for i, name := range names {
		u.Path, u.RawPath = "/"+name, ""
		vhostURL := u.String()
		// The command returns once the definitions are applied; should a
		// broker apply them in the background, the test waits until it
		// may use the vhost.
		Eventually(t, "vhost "+name+" to accept the test's user", func() bool {
			c, err := amqp.Dial(vhostURL)
			if err == nil {
				_ = c.Close()
			}
			return err == nil
		})
		urls[i] = vhostURL
	}
	return urls
}

// deleteVHosts deletes the vhosts that exist of names: one at a time with
// delete_vhost, or several in one rabbitmqctl eval of rabbit_vhost:delete
// (the broker's own function behind delete_vhost), and one at a time again
// should that not answer ok for each.
func deleteVHosts(admin *Admin, names []string) error {
	if len(names) > 1 {
		quoted := make([]string, len(names))
		for i, n := range names {
			quoted[i] = "<<" + strconv.Quote(n) + ">>"
		}
		expr := fmt.Sprintf(`[rabbit_vhost:delete(V, <<"warren-test">>) || V <- [%s], rabbit_vhost:exists(V)].`, strings.Join(quoted, ","))
		out, err := admin.Try(nil, "--quiet", "eval", expr)
		// A list of ok, one per vhost that existed, which rabbitmqctl
		// breaks over lines when it is long.
		if err == nil && strings.Trim(strings.Join(strings.Fields(out), ""), "[ok,]") == "" {
			return nil
		}
	}
	var errs []string
	for _, n := range names {
		if _, err := admin.Try(nil, "--quiet", "delete_vhost", n); err != nil && (len(names) == 1 || !strings.Contains(err.Error(), "does not exist")) {
			errs = append(errs, fmt.Sprintf("delete vhost %s: %v", n, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return nil
}
