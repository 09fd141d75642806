package main

import (
	"context"
	"fmt"
	"time"

	cat "github.com/warrenbus/warren/examples/catalogue/catalogueevents"
)

// publishAll publishes one fact of each kind through the typed Publisher,
// and one that breaks its schema, which the Publisher rejects before
// sending. It returns the ids of the facts the broker confirmed, by routing
// key.
func publishAll(ctx context.Context, pub *cat.Publisher, j *journal) (map[string]string, error) {
	now := time.Now().UTC().Truncate(time.Second)
	price := cat.Money{Amount: 1999, Currency: cat.CurrencyEUR}
	ids := map[string]string{}
	published := func(routingKey, id string, err error) error {
		if err != nil {
			return err // it names the routing key
		}
		j.printf("publisher", routingKey, "published, confirmed by the broker: id %s", id)
		ids[routingKey] = id
		return nil
	}

	id, err := pub.PublishImportCompleted(ctx, cat.ImportCompleted{
		ImportID: "0b9e6f2a-5d1c-4e7b-9a8f-3c2d1e0f4a5b", Supplier: "Acme Books", CompletedAt: now,
		Counts: cat.ImportCompletedCounts{Created: 1, Updated: 1},
	})
	if err := published(cat.ImportCompletedRoutingKey, id, err); err != nil {
		return nil, err
	}
	id, err = pub.PublishItemUpdated(ctx, cat.ItemUpdated{
		Item:      cat.Item{Sku: "BOOK-123", Name: "The Warren Handbook", Price: price},
		Changed:   []cat.ItemUpdatedChangedItem{cat.ItemUpdatedChangedItemPrice},
		UpdatedAt: now,
	})
	if err := published(cat.ItemUpdatedRoutingKey, id, err); err != nil {
		return nil, err
	}
	// Version 2 of catalogue.item.deleted says who removed the item;
	// consumers read facts of version 1 still queued through the
	// generated upcast (events/catalogue/item-deleted.v2.json).
	reason, by := "out of print", "curator@example.com"
	id, err = pub.PublishItemDeleted(ctx, cat.ItemDeleted{Sku: "BOOK-99", DeletedAt: now, Reason: &reason, DeletedBy: &by})
	if err := published(cat.ItemDeletedRoutingKey, id, err); err != nil {
		return nil, err
	}
	id, err = pub.PublishOrderPlaced(ctx, cat.OrderPlaced{
		OrderID:  "7d0c7f68-1c1b-4bc4-9e2f-3c7a3c1f8e11",
		Customer: cat.OrderPlacedCustomer{CustomerID: "c-42", Email: "ada@example.com"},
		Lines:    []cat.OrderLine{{Sku: "BOOK-123", Quantity: 2, UnitPrice: price}},
		Total:    cat.Money{Amount: 3998, Currency: cat.CurrencyEUR},
		Payment:  cat.OrderPlacedPayment{InvoicePayment: &cat.InvoicePayment{Method: cat.InvoicePaymentMethodInvoice, DueDays: cat.InvoicePaymentDueDays30}},
		PlacedAt: now,
	})
	if err := published(cat.OrderPlacedRoutingKey, id, err); err != nil {
		return nil, err
	}

	// An item without a name breaks the schema (minLength 1), which Go's
	// type system cannot say: the Publisher validates and sends nothing.
	_, err = pub.PublishItemUpdated(ctx, cat.ItemUpdated{
		Item:      cat.Item{Sku: "BOOK-124", Price: price},
		Changed:   []cat.ItemUpdatedChangedItem{cat.ItemUpdatedChangedItemName},
		UpdatedAt: now,
	})
	if err == nil {
		return nil, fmt.Errorf("publish %s: an item without a name was accepted", cat.ItemUpdatedRoutingKey)
	}
	j.printf("publisher", cat.ItemUpdatedRoutingKey, "rejected before sending: %v", err)
	return ids, nil
}
