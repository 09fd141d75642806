package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os/signal"
	"syscall"
	"time"

	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/topology"
)

// In generated code these come from the schema directory.
var (
	factImportCompleted = runtime.Fact{RoutingKey: "catalogue.import.completed", Version: 1}
	shop, _             = topology.Build(topology.Spec{Consumers: []topology.ConsumerSpec{
		{Name: "search-indexer", Bindings: []string{"catalogue.#"}},
	}})
)

type importCompleted struct {
	CatalogueID int `json:"catalogue_id"`
}

// Dial connects to a cluster of three nodes over TLS, failing over between
// them, and declares the topology on every connect.
func ExampleDial() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := runtime.Dial(ctx, runtime.Config{
		URLs: []string{
			"amqps://app:secret@rabbit-1:5671/",
			"amqps://app:secret@rabbit-2:5671/",
			"amqps://app:secret@rabbit-3:5671/",
		},
		Topology:       &shop,
		ConnectionName: "catalogue-api",
	})
	if err != nil {
		log.Fatal(err) // the password never appears in err
	}
	defer conn.Close()
}

// A Publisher waits for the broker's confirm; many goroutines may share one.
func ExamplePublisher_Publish() {
	ctx := context.Background()
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{"amqp://guest:guest@127.0.0.1:5672/"}, Topology: &shop})
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	pub, err := runtime.NewPublisher(conn, topology.DefaultExchanges.Events)
	if err != nil {
		log.Fatal(err)
	}
	// Publish waits through a broker outage up to this deadline.
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	id, err := pub.Publish(ctx, factImportCompleted, importCompleted{CatalogueID: 42})
	if errors.Is(err, runtime.ErrUnroutable) {
		log.Fatal("nothing is bound to catalogue.import.completed: is the topology declared?")
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("published", id)
}

// A Consumer runs until its context is cancelled, then finishes the work in
// hand and returns.
func ExampleConsumer_Run() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{"amqp://guest:guest@127.0.0.1:5672/"}, Topology: &shop})
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	spec, _ := shop.Consumer("search-indexer")
	consumer, err := runtime.NewConsumer(conn, spec, []runtime.Route{
		runtime.Handle(factImportCompleted, func(ctx context.Context, d runtime.Delivery, f importCompleted) error {
			if f.CatalogueID <= 0 {
				// No retry will fix this: straight to search-indexer.poison.
				return runtime.Permanent(fmt.Errorf("catalogue id %d", f.CatalogueID))
			}
			// A plain error is transient: retried after 1s, 2s, 4s, ...
			return reindex(ctx, f.CatalogueID)
		}),
	}, runtime.WithShutdownTimeout(20*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	if err := consumer.Run(ctx); err != nil {
		log.Fatal(err)
	}
}

// Figures reads what a dashboard shows for one consumer.
func ExampleConn_Figures() {
	ctx := context.Background()
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{"amqp://guest:guest@127.0.0.1:5672/"}})
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	spec, _ := shop.Consumer("search-indexer")
	f, err := conn.Figures(ctx, spec)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("depth %d, poison %d, consumers %d, redelivered %.1f%%\n",
		f.WorkDepth, f.PoisonDepth, f.Consumers, 100*f.RedeliveryRate)
}

func reindex(context.Context, int) error { return nil }

// RunAll runs a service's consumers together and serves their health to
// Kubernetes; a handler marks an outage of its dependency with
// Unavailable, so the outage pauses the consumer instead of poisoning
// messages.
func ExampleRunAll() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{"amqp://guest:guest@127.0.0.1:5672/"}, Topology: &shop})
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	spec, _ := shop.Consumer("search-indexer")
	indexer, err := runtime.NewConsumer(conn, spec, []runtime.Route{
		runtime.Handle(factImportCompleted, func(ctx context.Context, d runtime.Delivery, f importCompleted) error {
			if err := reindex(ctx, f.CatalogueID); err != nil {
				return runtime.Unavailable(fmt.Errorf("search cluster: %w", err))
			}
			return nil
		}),
	}, runtime.WithOutagePolicy(runtime.OutagePolicy{PauseAfter: 10}))
	if err != nil {
		log.Fatal(err)
	}
	health := runtime.HealthHandler(conn, indexer)
	mux := http.NewServeMux()
	mux.Handle("/livez", health)
	mux.Handle("/readyz", health)
	go func() { _ = http.ListenAndServe("127.0.0.1:8080", mux) }()

	if err := runtime.RunAll(ctx, indexer); err != nil {
		log.Fatal(err)
	}
}

// PublishAsync keeps many publishes in flight from one goroutine.
func ExamplePublisher_PublishAsync() {
	ctx := context.Background()
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{"amqp://guest:guest@127.0.0.1:5672/"}, Topology: &shop})
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	pub, err := runtime.NewPublisher(conn, shop.Exchanges[0].Name)
	if err != nil {
		log.Fatal(err)
	}
	var pending []*runtime.Pending
	for id := 1; id <= 500; id++ {
		h, err := pub.PublishAsync(ctx, factImportCompleted, importCompleted{CatalogueID: id})
		if err != nil {
			log.Fatal(err) // nothing was sent for this one
		}
		pending = append(pending, h)
	}
	for _, h := range pending {
		if err := h.Wait(ctx); err != nil {
			log.Fatalf("fact %s: %v", h.ID(), err)
		}
	}
}

// opensAt returns when the partner's API opens next: 09:00 UTC.
func opensAt(now time.Time) time.Time {
	open := time.Date(now.Year(), now.Month(), now.Day(), 9, 0, 0, 0, time.UTC)
	if !now.Before(open) {
		open = open.AddDate(0, 0, 1)
	}
	return open
}

// A handler defers a fact it cannot handle yet: "come back at 09:00, this
// is not a failure". The fact returns to this consumer alone at that time,
// its attempts unspent; nothing goes near the poison queue.
func ExampleDeferUntil() {
	handle := func(ctx context.Context, d runtime.Delivery, v importCompleted) error {
		now := time.Date(2026, 12, 3, 6, 30, 0, 0, time.UTC) // time.Now() in a service
		if now.Hour() < 9 {
			return fmt.Errorf("partner closed: %w", runtime.DeferUntil(opensAt(now)))
		}
		return nil // call the partner
	}
	err := handle(context.Background(), runtime.Delivery{}, importCompleted{CatalogueID: 7})

	var de *runtime.DeferredError
	fmt.Println(runtime.IsDeferred(err), errors.As(err, &de) && de.DueAt.Hour() == 9)
	fmt.Println(err)
	// Output:
	// true true
	// partner closed: deferred until 2026-12-03T09:00:00.000Z
}

// Defer's delay must fit the delay levels: a negative one is a failure
// (matching ErrDelay) that walks the retry ladder, not a deferral.
func ExampleDefer() {
	fmt.Println(runtime.IsDeferred(runtime.Defer(10 * time.Minute)))
	err := runtime.Defer(-time.Second)
	fmt.Println(runtime.IsDeferred(err), errors.Is(err, runtime.ErrDelay))
	// Output:
	// true
	// false true
}
