package runtime

import (
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	amqp "github.com/rabbitmq/amqp091-go"
)

// The benchmarks of publishing and consuming what users run (the generated
// code on a realistic schema, beside raw amqp091-go and watermill) are in
// the bench module at the repository's root; see docs/BENCHMARKS.md. What
// is here serves the request benchmark.

// publishInParallel publishes b.N messages from n goroutines.
func publishInParallel(b *testing.B, n int, publish func(i int) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for range n {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				if err := publish(int(i)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
}

func rawEnvelope(payload any) ([]byte, string, error) {
	p, err := json.Marshal(payload)
	if err != nil {
		return nil, "", err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, "", err
	}
	body, err := json.Marshal(Envelope{ID: id.String(), OccurredAt: time.Now().UTC(), Payload: p})
	return body, id.String(), err
}

// confirmChannel opens a raw channel in confirm mode whose returns are
// drained, as any mandatory publisher must.
func (br *broker) confirmChannel(t testing.TB) *amqp.Channel {
	t.Helper()
	ch, err := br.raw.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	returns := ch.NotifyReturn(make(chan amqp.Return, 16))
	go func() {
		for range returns {
		}
	}()
	return ch
}
