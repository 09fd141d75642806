// Command catalogue is the reference walkthrough of warren: a small service
// built on catalogueevents, the package generated from
// examples/catalogue/events (make generate).
//
// It connects to the broker at WARREN_AMQP_URL (default the local one),
// declares the topology, starts the search-indexer, order-mailer,
// price-history and sales-ledger (a batch consumer) consumers, publishes a few facts with the typed Publisher, prints what
// each handler did, and shuts down once every fact is handled. The
// search-indexer fails its first attempt at each item update, as a busy
// search cluster would, so the run also shows a retry that waits in the
// broker (the 1s delay queue search-indexer.retry.1s), not in a sleeping
// consumer.
//
//	make demo    # go run ./examples/catalogue
//
// The exchanges and queues it declares (catalogue.*, search-indexer*,
// order-mailer*) stay on the broker, as a service's topology does.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/warrenbus/warren/examples/catalogue/catalogueevents"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/idempotency"
)

const defaultURL = "amqp://guest:guest@127.0.0.1:5672/"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The whole walkthrough takes a few seconds; the deadline only stops a
	// run against a broker that never answers.
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	url := os.Getenv("WARREN_AMQP_URL")
	if url == "" {
		url = defaultURL
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if _, err := run(ctx, url, os.Stdout, logger); err != nil {
		fmt.Fprintln(os.Stderr, "catalogue:", err)
		os.Exit(1)
	}
}

// run is the whole service: connect and declare, start the consumers,
// publish, wait until every published fact is handled, shut down. It
// returns what the handlers did, in order.
func run(ctx context.Context, url string, out io.Writer, logger *slog.Logger) ([]entry, error) {
	// The topology is declared on connect and again after every reconnect.
	conn, err := runtime.Dial(ctx, runtime.Config{
		URLs:           []string{url},
		Topology:       &catalogueevents.Topology,
		Logger:         logger,
		ConnectionName: "catalogue-demo",
	})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	j := newJournal(out)

	// Consumers first, so that they are reading when the facts arrive. The
	// mailer sends e-mail, which must not go out twice: a guard skips a fact
	// it has already handled (MemoryGuard here; SQLGuard in production).
	indexer, err := catalogueevents.NewSearchIndexerConsumer(conn, &searchIndexer{j: j})
	if err != nil {
		return nil, err
	}
	mailer, err := catalogueevents.NewOrderMailerConsumer(conn, &orderMailer{j: j},
		runtime.WithGuard(idempotency.NewMemoryGuard(idempotency.MemoryConfig{})))
	if err != nil {
		return nil, err
	}
	// The price history is an ordered consumer: one item's facts one at a
	// time, in publish order, different items in parallel.
	prices, err := catalogueevents.NewPriceHistoryConsumer(conn, &priceHistory{j: j})
	if err != nil {
		return nil, err
	}
	// The sales ledger is a batch consumer: orders a batch at a time, each
	// settled on its own.
	ledger, err := catalogueevents.NewSalesLedgerConsumer(conn, &salesLedger{j: j})
	if err != nil {
		return nil, err
	}
	consumersCtx, stopConsumers := context.WithCancel(context.WithoutCancel(ctx))
	defer stopConsumers()
	// RunAll runs all four until consumersCtx ends (or one fails for good) and
	// shuts them down gracefully before it returns.
	stopped := make(chan error, 1)
	go func() { stopped <- runtime.RunAll(consumersCtx, indexer, mailer, prices, ledger) }()

	pub, err := catalogueevents.NewPublisher(conn)
	if err != nil {
		return nil, err
	}
	defer pub.Close()
	ids, err := publishAll(ctx, pub, j)
	if err != nil {
		return nil, err
	}

	waitErr := j.waitFor(ctx, map[string][]string{
		"search-indexer": {ids[catalogueevents.ImportCompletedRoutingKey], ids[catalogueevents.ItemUpdatedRoutingKey], ids[catalogueevents.ItemDeletedRoutingKey]},
		"price-history":  {ids[catalogueevents.ItemUpdatedRoutingKey], ids[catalogueevents.ItemDeletedRoutingKey]},
		"order-mailer":   {ids[catalogueevents.OrderPlacedRoutingKey]},
		"sales-ledger":   {ids[catalogueevents.OrderPlacedRoutingKey]},
	})
	// Graceful shutdown: stop taking deliveries, let running handlers
	// finish, then close the connection (deferred above).
	stopConsumers()
	if err := <-stopped; err != nil && waitErr == nil {
		waitErr = err
	}
	if waitErr != nil {
		return j.entries(), waitErr
	}
	fmt.Fprintln(out, "every fact handled; consumers stopped cleanly")
	return j.entries(), nil
}
