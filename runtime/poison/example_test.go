package poison_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/poison"
	"github.com/warrenbus/warren/runtime/topology"
)

// An operator's endpoint: show what order-mailer gave up on, then, once
// the mail server is back, send the order.placed facts back to it alone.
// Generated code has the topology as a variable; here it is built.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{"amqp://guest:guest@127.0.0.1:5672/"}})
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	top, err := topology.Build(topology.Spec{Consumers: []topology.ConsumerSpec{
		{Name: "order-mailer", Bindings: []string{"order.placed"}},
	}})
	if err != nil {
		log.Fatal(err)
	}
	mailer, _ := top.Consumer("order-mailer")

	waiting, err := poison.List(ctx, conn, mailer, poison.Filter{Limit: 20})
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range waiting {
		fmt.Printf("%s %s after %d attempts: %s\n", m.ID, m.RoutingKey, m.Attempts, m.Failure)
	}

	replayed, err := poison.Replay(ctx, conn, mailer, poison.Filter{RoutingKey: "order.placed"})
	fmt.Printf("replayed %d\n", len(replayed))
	if err != nil {
		log.Fatal(err)
	}
}
