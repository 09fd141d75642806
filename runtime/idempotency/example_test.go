package idempotency_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/warrenbus/warren/runtime/idempotency"
)

// A message delivered twice is handled once; a failed attempt leaves no
// claim, so its retry runs the handler again.
func ExampleMemoryGuard() {
	guard := idempotency.NewMemoryGuard(idempotency.MemoryConfig{})
	ctx := context.Background()
	handle := func(attempt string, fail bool) {
		dup, err := guard.Run(ctx, "order-mailer", "msg-42", func(ctx context.Context) error {
			fmt.Println(attempt + ": sending the confirmation e-mail")
			if fail {
				return errors.New("mail server down")
			}
			return nil
		})
		fmt.Printf("%s: duplicate=%v err=%v\n", attempt, dup, err)
	}
	handle("first delivery", true)
	handle("retry", false)
	handle("redelivery", false)
	// Output:
	// first delivery: sending the confirmation e-mail
	// first delivery: duplicate=false err=mail server down
	// retry: sending the confirmation e-mail
	// retry: duplicate=false err=<nil>
	// redelivery: duplicate=true err=<nil>
}

// The handler writes through the claim's transaction, so its row and the
// claim commit together: the redelivered message finds the claim and adds
// no second row.
func ExampleSQLGuard() {
	dir, err := os.MkdirTemp("", "warren-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "shop.db"))
	if err != nil {
		panic(err)
	}
	defer db.Close()
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE TABLE shipments (order_id TEXT)`); err != nil {
		panic(err)
	}

	guard, err := idempotency.NewSQLGuard(db, idempotency.SQLConfig{Dialect: idempotency.SQLite})
	if err != nil {
		panic(err)
	}
	if err := guard.Migrate(ctx); err != nil {
		panic(err)
	}
	ship := func(ctx context.Context) error {
		tx, ok := idempotency.Tx(ctx)
		if !ok {
			return errors.New("no claim transaction")
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO shipments (order_id) VALUES (?)`, "order-7")
		return err
	}
	for range 2 {
		dup, err := guard.Run(ctx, "shipper", "msg-7", ship)
		fmt.Printf("duplicate=%v err=%v\n", dup, err)
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM shipments`).Scan(&n); err != nil {
		panic(err)
	}
	fmt.Println("shipments:", n)
	// Output:
	// duplicate=false err=<nil>
	// duplicate=true err=<nil>
	// shipments: 1
}

// PruneEvery keeps the claims table small; run it next to the consumer.
func ExamplePruneEvery() {
	guard := idempotency.NewMemoryGuard(idempotency.MemoryConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go idempotency.PruneEvery(ctx, guard, time.Hour, idempotency.DefaultRetention, func(err error) {
		fmt.Println("prune idempotency claims:", err)
	})
}
