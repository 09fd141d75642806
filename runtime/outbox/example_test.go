package outbox_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/outbox"
	"github.com/warrenbus/warren/runtime/topology"
)

// In generated code the fact comes from the schema directory.
var factOrderPlaced = runtime.Fact{RoutingKey: "order.placed", Version: 1}

type orderPlaced struct {
	OrderID string `json:"order_id"`
}

// The fact is written in the same transaction as the order: committed
// together, or (the second order) rolled back together.
func ExampleOutbox_Write() {
	dir, err := os.MkdirTemp("", "warren-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "shop.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE TABLE orders (id TEXT PRIMARY KEY)`); err != nil {
		log.Fatal(err)
	}
	ob, err := outbox.New(outbox.Config{Dialect: outbox.SQLite})
	if err != nil {
		log.Fatal(err)
	}
	if err := ob.Migrate(ctx, db); err != nil {
		log.Fatal(err)
	}

	placeOrder := func(id string, commit bool) (messageID string) {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			log.Fatal(err)
		}
		defer tx.Rollback() //nolint:errcheck // a no-op after Commit
		if _, err := tx.ExecContext(ctx, `INSERT INTO orders (id) VALUES (?)`, id); err != nil {
			log.Fatal(err)
		}
		messageID, err = ob.Write(ctx, tx, factOrderPlaced, orderPlaced{OrderID: id})
		if err != nil {
			log.Fatal(err)
		}
		if commit {
			if err := tx.Commit(); err != nil {
				log.Fatal(err)
			}
		}
		return messageID
	}
	placed := placeOrder("o-1", true)
	placeOrder("o-2", false)

	// What a relay will publish: the committed order's fact alone, with
	// the message id Write returned.
	rows, err := db.QueryContext(ctx, `SELECT routing_key, envelope FROM warren_outbox`)
	if err != nil {
		log.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var key string
		var env runtime.Envelope
		var body []byte
		if err := rows.Scan(&key, &body); err != nil {
			log.Fatal(err)
		}
		if err := json.Unmarshal(body, &env); err != nil {
			log.Fatal(err)
		}
		fmt.Println(key, string(env.Payload), env.ID == placed)
	}
	if err := rows.Err(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// order.placed {"order_id":"o-1"} true
}

// A relay beside the service publishes what committed transactions wrote,
// until the service stops.
func ExampleRelay_Run() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	db, err := sql.Open("sqlite", "file:/var/lib/shop/shop.db?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	shop, err := topology.Build(topology.Spec{Consumers: []topology.ConsumerSpec{
		{Name: "order-mailer", Bindings: []string{"order.*"}},
	}})
	if err != nil {
		log.Fatal(err)
	}
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{"amqp://guest:guest@127.0.0.1:5672/"}, Topology: &shop})
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	pub, err := runtime.NewPublisher(conn, topology.DefaultExchanges.Events)
	if err != nil {
		log.Fatal(err)
	}
	relay, err := outbox.NewRelay(db, pub, outbox.RelayConfig{Dialect: outbox.SQLite})
	if err != nil {
		log.Fatal(err)
	}
	if err := relay.Run(ctx); err != nil {
		log.Fatal(err)
	}
	log.Printf("relay stopped: %+v", relay.Stats())
}
