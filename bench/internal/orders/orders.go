// Package orders builds the orders the benchmarks publish: the generated
// benchevents.OrderPlaced, and the plain types a user of raw amqp091-go or
// the stream client writes by hand for the same JSON.
package orders

import (
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/warrenbus/warren/bench/benchevents"
	"github.com/warrenbus/warren/runtime/schemaset"
)

// Order returns the i-th order of the benchmarks: about 1 KiB of JSON,
// every constraint of the schema exercised, the ids and amounts varying.
func Order(i int) benchevents.OrderPlaced {
	name, note := "Ada Lovelace", fmt.Sprintf("Please leave the parcel with the neighbour at number %d if nobody is at home; the bell does not work.", i%97)
	titles := []string{"Analytical Engine, hardback edition", "Notes on the Analytical Engine", "Difference Engine No. 2 poster", "Punched cards, box of 500"}
	o := benchevents.OrderPlaced{
		OrderID: uuid.NewSHA1(uuid.NameSpaceOID, fmt.Appendf(nil, "order-%d", i)).String(),
		Customer: benchevents.OrderPlacedCustomer{
			CustomerID: fmt.Sprintf("C-%06d", i%1000000),
			Email:      "ada.lovelace@example.com",
			Name:       &name,
			Address: benchevents.Address{
				Street: "12 St James's Square", City: "London", Postcode: "10115",
				Country: benchevents.AddressCountryGB,
			},
		},
		Status:   benchevents.OrderPlacedStatusPlaced,
		PlacedAt: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second),
		Tags:     []string{"gift", "express", "first-order"},
	}
	o.Note = schemaset.Some(note)
	var total int64
	for j := range titles {
		price := int64(1000 + 250*j + i%100)
		qty := int64(1 + (i+j)%5)
		total += price * qty
		o.Lines = append(o.Lines, benchevents.OrderLine{
			Sku: fmt.Sprintf("BOOK%04d-EN", (i+j)%10000), Title: &titles[j], Quantity: qty,
			UnitPrice: benchevents.Money{Amount: price, Currency: benchevents.MoneyCurrencyEUR},
		})
	}
	o.Total = benchevents.Money{Amount: total, Currency: benchevents.MoneyCurrencyEUR}
	return o
}

// The plain types mirror benchevents.OrderPlaced field for field with no
// methods: what a user of raw amqp091-go or watermill writes by hand and
// decodes with encoding/json, without any validation.
type (
	// PlainEnvelope is warren's envelope around a PlainOrder.
	PlainEnvelope struct {
		ID         string     `json:"id"`
		OccurredAt time.Time  `json:"occurred_at"`
		Payload    PlainOrder `json:"payload"`
	}
	// PlainOrder is benchevents.OrderPlaced as a plain struct.
	PlainOrder struct {
		OrderID  string        `json:"order_id"`
		Customer plainCustomer `json:"customer"`
		Lines    []plainLine   `json:"lines"`
		Total    plainMoney    `json:"total"`
		Status   string        `json:"status"`
		PlacedAt time.Time     `json:"placed_at"`
		Tags     []string      `json:"tags,omitempty"`
		Note     *string       `json:"note,omitempty"`
	}
	plainCustomer struct {
		CustomerID string       `json:"customer_id"`
		Email      string       `json:"email"`
		Name       *string      `json:"name,omitempty"`
		Address    plainAddress `json:"address"`
	}
	plainAddress struct {
		Street   string `json:"street"`
		City     string `json:"city"`
		Postcode string `json:"postcode"`
		Country  string `json:"country"`
	}
	plainLine struct {
		Sku       string     `json:"sku"`
		Title     *string    `json:"title,omitempty"`
		Quantity  int64      `json:"quantity"`
		UnitPrice plainMoney `json:"unit_price"`
	}
	plainMoney struct {
		Amount   int64  `json:"amount"`
		Currency string `json:"currency"`
	}
)

// Plain returns the i-th order as the plain type.
func Plain(i int) PlainOrder {
	o := Order(i)
	var p PlainOrder
	p.OrderID, p.Status, p.PlacedAt, p.Tags = o.OrderID, string(o.Status), o.PlacedAt, o.Tags
	if o.Note.Valid {
		p.Note = &o.Note.Value
	}
	c := o.Customer
	p.Customer = plainCustomer{CustomerID: c.CustomerID, Email: c.Email, Name: c.Name, Address: plainAddress{
		Street: c.Address.Street, City: c.Address.City, Postcode: c.Address.Postcode, Country: string(c.Address.Country),
	}}
	for _, l := range o.Lines {
		p.Lines = append(p.Lines, plainLine{Sku: l.Sku, Title: l.Title, Quantity: l.Quantity,
			UnitPrice: plainMoney{Amount: l.UnitPrice.Amount, Currency: string(l.UnitPrice.Currency)}})
	}
	p.Total = plainMoney{Amount: o.Total.Amount, Currency: string(o.Total.Currency)}
	return p
}
