// Command checkout runs a saga against the local broker: two orders are
// placed, one is paid and completes, the other is not and is cancelled
// when its payment window (two seconds here) has passed. The saga keeps
// its instances in a SQLite file of a temporary directory.
//
//	go run ./examples/checkout
package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	_ "modernc.org/sqlite"

	ev "github.com/warrenbus/warren/examples/checkout/checkoutevents"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/sqldb"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "checkout:", err)
		os.Exit(1)
	}
}

// mailer is the consumer that tells customers of cancelled orders.
type mailer struct {
	cancelled chan string
}

func (m *mailer) HandleOrderCancelled(_ context.Context, _ runtime.Delivery, f ev.OrderCancelled) error {
	m.cancelled <- f.OrderID
	return nil
}

func run(ctx context.Context, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	url := os.Getenv("WARREN_AMQP_URL")
	if url == "" {
		url = "amqp://guest:guest@127.0.0.1:5672/"
	}
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{url}, Topology: &ev.Topology, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	defer conn.Close()
	dir, err := os.MkdirTemp("", "warren-checkout")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "checkout.db")+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)")
	if err != nil {
		return err
	}
	defer db.Close()
	parts, err := build(ctx, conn, db, sqldb.SQLite, Tables{Claims: "claims", Outbox: "outbox", Instances: "sagas"}, 2*time.Second, 0)
	if err != nil {
		return err
	}
	m := &mailer{cancelled: make(chan string, 1)}
	mc, err := ev.NewOrderMailerConsumer(conn, m)
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, r := range []interface{ Run(context.Context) error }{parts.Saga, parts.Relay, mc} {
		wg.Go(func() { _ = r.Run(runCtx) })
	}
	defer wg.Wait()
	defer stop()

	pub, err := ev.NewPublisher(conn)
	if err != nil {
		return err
	}
	defer pub.Close()
	for _, step := range []func() (string, error){
		func() (string, error) {
			return pub.PublishOrderPlaced(ctx, ev.OrderPlaced{OrderID: "order-1", TotalCents: 2500})
		},
		func() (string, error) {
			return pub.PublishOrderPlaced(ctx, ev.OrderPlaced{OrderID: "order-2", TotalCents: 900})
		},
		func() (string, error) {
			return pub.PublishOrderPaid(ctx, ev.OrderPaid{OrderID: "order-1", AmountCents: 2500})
		},
	} {
		if _, err := step(); err != nil {
			return err
		}
	}
	fmt.Fprintln(out, "placed order-1 and order-2; paid order-1")
	select {
	case id := <-m.cancelled:
		fmt.Fprintf(out, "%s was not paid in time: cancelled\n", id)
	case <-ctx.Done():
		return fmt.Errorf("no order was cancelled: %w", ctx.Err())
	}
	st := parts.Store.Stats()
	fmt.Fprintf(out, "instances started %d, completed %d, timed out %d\n", st.Started, st.Completed, st.TimedOut)
	return nil
}
