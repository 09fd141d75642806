package main

import (
	"context"
	"database/sql"
	"fmt"

	cat "github.com/warrenbus/warren/examples/catalogue/catalogueevents"
)

// placeOrder stores an order and writes its OrderPlaced fact into the
// outbox in one transaction: the fact is published (by a relay made with
// cat.NewOutboxRelay) if and only if the order is stored. It returns the
// fact's message id. orders is the service's own table (id, total).
func placeOrder(ctx context.Context, db *sql.DB, w *cat.OutboxWriter, orders string, o cat.OrderPlaced) (messageID string, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return "", err
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`INSERT INTO %q (id, total) VALUES ($1, $2)`, orders), o.OrderID, o.Total.Amount); err != nil {
		return "", fmt.Errorf("store order %s: %w", o.OrderID, err)
	}
	id, err := w.WriteOrderPlaced(ctx, tx, o)
	if err != nil {
		return "", err
	}
	return id, tx.Commit()
}
