package console

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/cmd/warren/internal/liveversions"
	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/topology"
)

// Ports of the console's management-test node (see testenv.ManagementNode).
var mgmtNode = testenv.NodePorts{Name: "warren-console-mgmt", AMQP: 5697, Dist: 25697, HTTP: 15697}

// With the management API the overview shows the work queue's redelivery
// rate: a consumer that keeps handing its message back makes the broker
// redeliver it, and the figure rises above zero. The credentials come from
// the AMQP URL and appear nowhere on the page.
func TestManagementRedeliveryRate(t *testing.T) {
	amqpURL, mgmtURL := testenv.ManagementNode(t, mgmtNode)
	top, err := topology.Build(topology.Spec{Consumers: []topology.ConsumerSpec{
		{Name: "flaky", Bindings: []string{"order.*"}, QueueType: topology.Classic, MaxAttempts: 1},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{amqpURL}, Topology: &top, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	mgmt, err := NewManagement(mgmtURL, amqpURL)
	if err != nil {
		t.Fatal(err)
	}
	// The schema says flaky reads versions 1 and 2 of order.placed, and
	// only version 1 is published beside 2; the process attached below
	// announces it reads version 2 alone.
	versions := []liveversions.Reads{{Consumer: "flaky", Queues: []string{"flaky"}, Fact: "order.placed", Schema: []int{1, 2}, Published: []int{1, 2}}}
	srv, err := New(Config{Broker: conn, Topology: top, BrokerURL: amqpURL, Token: testToken, Management: mgmt,
		Versions: versions, Interval: 200 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Sample(ctx)
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	c := &consoleCase{t: t, conn: conn, top: top, srv: srv, http: hs}

	// A consumer that hands every delivery back: each comes again, redelivered.
	c.publish(topology.DefaultExchanges.Events, "order.placed", amqpPublishing(`{}`))
	ch, err := conn.OpenChannel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	deliveries, err := ch.Consume("flaky", "", false, false, false, false, amqp.Table{runtime.ArgReads: "order.placed=2"})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for d := range deliveries {
			time.Sleep(20 * time.Millisecond)
			_ = d.Nack(false, true)
		}
	}()

	var o overviewJSON
	testenv.Eventually(t, "a redelivery rate above zero", func() bool {
		c.getJSON("/api/overview", &o)
		r := o.Consumers[0].Rates
		return r != nil && r.Redelivered > 0 && r.Delivered > 0
	})
	if len(o.Unshown) != 0 || o.Management != mgmtURL[:len(mgmtURL)-1] {
		t.Errorf("with the management API: unshown %q, management %q", o.Unshown, o.Management)
	}
	_, raw := c.do("GET", "/api/overview", "", nil)
	if containsAny(raw, "guest:guest", ":guest@") {
		t.Errorf("the overview shows a password:\n%s", raw)
	}
	if want := "order.placed 1-2, live 2 ×1, published 1,2: version 1 can be retired"; o.Consumers[0].Versions != want {
		t.Errorf("versions of flaky: %q, want %q", o.Consumers[0].Versions, want)
	}
	last := o.Consumers[0].History[len(o.Consumers[0].History)-1]
	if last[4] < 0 {
		t.Errorf("the history does not record the redelivery rate: %v", last)
	}
}
