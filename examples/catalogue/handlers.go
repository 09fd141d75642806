package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	cat "github.com/warrenbus/warren/examples/catalogue/catalogueevents"
	"github.com/warrenbus/warren/runtime"
)

// searchIndexer implements cat.SearchIndexerHandler. A real one would
// write to a search index; this one says what it would do.
type searchIndexer struct{ j *journal }

func (s *searchIndexer) HandleImportCompleted(_ context.Context, d runtime.Delivery, f cat.ImportCompleted) error {
	return s.j.handled(d, "reindexed %s after import %s: %d created, %d updated, %d deleted",
		f.Supplier, f.ImportID, f.Counts.Created, f.Counts.Updated, f.Counts.Deleted)
}

// errClusterBusy is a transient failure: returned as is (not marked
// runtime.Permanent), the runtime retries it through the delay queues.
var errClusterBusy = errors.New("search cluster busy")

func (s *searchIndexer) HandleItemUpdated(_ context.Context, d runtime.Delivery, f cat.ItemUpdated) error {
	// The first attempt fails, to show the retry: the copy waits out the
	// first step of the ladder in search-indexer.retry.1s and comes back
	// with Attempt 2.
	if d.Attempt == 1 {
		return s.j.failed(d, errClusterBusy)
	}
	return s.j.handled(d, "indexed %s %q at %s", f.Item.Sku, f.Item.Name, money(f.Item.Price))
}

func (s *searchIndexer) HandleItemDeleted(_ context.Context, d runtime.Delivery, f cat.ItemDeleted) error {
	return s.j.handled(d, "removed %s from the index", f.Sku)
}

// priceHistory implements cat.PriceHistoryHandler. It is an ordered
// consumer: the facts of one item (the ordering key /item/sku or /sku)
// reach it one at a time in publish order, so a price recorded after a
// deletion, or two prices swapped, cannot happen.
type priceHistory struct {
	j      *journal
	mu     sync.Mutex
	prices map[cat.SKU][]cat.Money
}

func (p *priceHistory) HandleItemUpdated(_ context.Context, d runtime.Delivery, f cat.ItemUpdated) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.prices == nil {
		p.prices = map[cat.SKU][]cat.Money{}
	}
	p.prices[f.Item.Sku] = append(p.prices[f.Item.Sku], f.Item.Price)
	return p.j.handled(d, "recorded %s at %s (%d price(s) so far)", f.Item.Sku, money(f.Item.Price), len(p.prices[f.Item.Sku]))
}

func (p *priceHistory) HandleItemDeleted(_ context.Context, d runtime.Delivery, f cat.ItemDeleted) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.prices[f.Sku])
	delete(p.prices, f.Sku)
	return p.j.handled(d, "closed the history of %s after %d price(s)", f.Sku, n)
}

// history returns the prices recorded for sku, in order.
func (p *priceHistory) history(sku cat.SKU) []cat.Money {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.prices[sku])
}

// orderMailer implements cat.OrderMailerHandler.
type orderMailer struct{ j *journal }

// errUndeliverable is permanent: the mail server refuses the address and
// would on every attempt, so the runtime sends the order to
// order-mailer.poison at once instead of retrying.
var errUndeliverable = errors.New("the mail server refuses the address")

func (m *orderMailer) HandleOrderPlaced(_ context.Context, d runtime.Delivery, f cat.OrderPlaced) error {
	if strings.HasSuffix(f.Customer.Email, ".invalid") {
		return m.j.failed(d, runtime.Permanent(fmt.Errorf("mail %s: %w", f.Customer.Email, errUndeliverable)))
	}
	return m.j.handled(d, "mailed %s the confirmation of order %s: %d line(s), %s",
		f.Customer.Email, f.OrderID, len(f.Lines), money(f.Total))
}

// salesLedger implements cat.SalesLedgerHandler, a batch consumer: it
// takes up to 20 orders at once and books them in one write (a real one
// would insert them in one statement, in the guard's transaction). An
// order it cannot book fails on its own; the others are booked.
type salesLedger struct{ j *journal }

func (l *salesLedger) HandleBatch(_ context.Context, b cat.SalesLedgerBatch) (runtime.Outcomes, error) {
	out := runtime.Outcomes{}
	for _, it := range b.OrderPlaced {
		if it.Fact.Total.Amount <= 0 {
			out.Fail(it.Delivery.MessageID, l.j.failed(it.Delivery, runtime.Permanent(fmt.Errorf("order %s: nothing to book", it.Fact.OrderID))))
			continue
		}
		_ = l.j.handled(it.Delivery, "booked order %s, %s, in a batch of %d", it.Fact.OrderID, money(it.Fact.Total), len(b.OrderPlaced))
		out.Done(it.Delivery.MessageID)
	}
	return out, nil
}

func money(m cat.Money) string {
	return fmt.Sprintf("%d.%02d %s", m.Amount/100, m.Amount%100, m.Currency)
}

// entry is one handler call.
type entry struct {
	Consumer   string
	RoutingKey string
	MessageID  string
	Attempt    int
	Err        error // nil when the fact was handled
	Text       string
}

// journal prints each handler call and lets run wait for facts to be
// handled. Handlers run concurrently, so it locks.
type journal struct {
	out     io.Writer
	mu      sync.Mutex
	log     []entry
	changed chan struct{} // closed and replaced on every entry
}

func newJournal(out io.Writer) *journal {
	return &journal{out: out, changed: make(chan struct{})}
}

func (j *journal) handled(d runtime.Delivery, format string, args ...any) error {
	j.add(entry{Consumer: d.Consumer, RoutingKey: d.RoutingKey, MessageID: d.MessageID, Attempt: d.Attempt, Text: fmt.Sprintf(format, args...)})
	return nil
}

// failed records err and returns it, for the handler to return.
func (j *journal) failed(d runtime.Delivery, err error) error {
	j.add(entry{Consumer: d.Consumer, RoutingKey: d.RoutingKey, MessageID: d.MessageID, Attempt: d.Attempt, Err: err})
	return err
}

func (j *journal) add(e entry) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.log = append(j.log, e)
	outcome := e.Text
	switch {
	case runtime.IsPermanent(e.Err):
		outcome = fmt.Sprintf("failed for good: %v (to the poison queue)", e.Err)
	case e.Err != nil:
		outcome = fmt.Sprintf("failed: %v (the broker retries it)", e.Err)
	}
	j.printLocked(e.Consumer, e.RoutingKey, "attempt %d: %s", e.Attempt, outcome)
	close(j.changed)
	j.changed = make(chan struct{})
}

// printf prints one line of the walkthrough: who, which fact, what.
func (j *journal) printf(who, routingKey, format string, args ...any) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.printLocked(who, routingKey, format, args...)
}

func (j *journal) printLocked(who, routingKey, format string, args ...any) {
	fmt.Fprintf(j.out, "%-14s  %-26s  %s\n", who, routingKey, fmt.Sprintf(format, args...))
}

func (j *journal) entries() []entry {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.log)
}

// waitFor returns once each consumer in want handled every message id
// listed for it, or with ctx's error.
func (j *journal) waitFor(ctx context.Context, want map[string][]string) error {
	for {
		j.mu.Lock()
		done := map[[2]string]bool{} // consumer, message id
		for _, e := range j.log {
			if e.Err == nil {
				done[[2]string{e.Consumer, e.MessageID}] = true
			}
		}
		changed := j.changed
		j.mu.Unlock()
		var missing []string
		for consumer, ids := range want {
			for _, id := range ids {
				if !done[[2]string{consumer, id}] {
					missing = append(missing, id)
				}
			}
		}
		if len(missing) == 0 {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d fact(s) to be handled: %w", len(missing), context.Cause(ctx))
		}
	}
}
