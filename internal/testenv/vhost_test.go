package testenv

import (
	"maps"
	"net/url"
	"slices"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
)

// With Main, vhosts come from batches: two takes of 3 and 6 make two
// batches of 8, hand no vhost out twice, and each one handed out takes
// the test's user; deleting them leaves none.
func TestVHostPoolMakesBatchesAndDeletesThemAll(t *testing.T) {
	base := AMQPURL(t)
	admin := BrokerAdmin(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	p := &vhostPool{batch: true}
	t.Cleanup(func() { _ = deleteVHosts(admin, slices.Collect(maps.Keys(p.made))) })
	a, err := p.take(admin, base, u.User.Username(), "pooltest", 3)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.take(admin, base, u.User.Username(), "pooltest", 6)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.made) != 2*poolBatch || len(p.free) != 2*poolBatch-9 {
		t.Fatalf("made %d, %d free; want %d and %d", len(p.made), len(p.free), 2*poolBatch, 2*poolBatch-9)
	}
	all := slices.Concat(a, b)
	if len(all) != 9 || len(slices.Compact(slices.Sorted(slices.Values(all)))) != 9 {
		t.Fatalf("handed out %q", all)
	}
	dial := func(name string) error {
		u.Path, u.RawPath = "/"+name, ""
		c, err := amqp.Dial(u.String())
		if err == nil {
			_ = c.Close()
		}
		return err
	}
	for _, name := range all {
		if err := dial(name); err != nil {
			t.Errorf("vhost %s: %v", name, err)
		}
	}
	if _, err := p.take(admin, "amqp://guest:guest@127.0.0.1:5999/", "guest", "pooltest", 1); err == nil {
		t.Error("a vhost of another broker came from the same pool")
	}
	if err := deleteVHosts(admin, slices.Collect(maps.Keys(p.made))); err != nil {
		t.Fatal(err)
	}
	for _, name := range all {
		if err := dial(name); err == nil {
			t.Errorf("vhost %s is still there", name)
		}
	}
}
