package poison_test

import (
	"fmt"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/poison"
)

func poisonedAt(consumer, failure string, at time.Time) runtime.PoisonEvent {
	return runtime.PoisonEvent{Consumer: consumer, Failure: failure, At: at, Headers: amqp.Table{runtime.HeaderFailure: failure}}
}

// The threshold alerts once per burst of one cause, per consumer: not
// for fewer facts, not for facts spread wider than the window, and again
// once a burst has passed.
func TestThresholdAlertsOncePerBurstOfACause(t *testing.T) {
	var alerts []poison.Alert
	hook := poison.Threshold(3, time.Minute, func(a poison.Alert) { alerts = append(alerts, a) })
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

	for i, s := range []int{0, 70, 140} { // one a minute apart: never 3 within a minute
		hook(poisonedAt("mailer", fmt.Sprintf("order %d: smtp timeout", i), at(s)))
	}
	hook(poisonedAt("mailer", "another cause", at(141)))
	hook(poisonedAt("indexer", "order 9: smtp timeout", at(142))) // another consumer
	if len(alerts) != 0 {
		t.Fatalf("alerts before the threshold: %+v", alerts)
	}
	hook(poisonedAt("mailer", "order 4: smtp timeout", at(150)))
	hook(poisonedAt("mailer", "order 5: smtp timeout", at(160))) // 140, 150, 160
	hook(poisonedAt("mailer", "order 6: smtp timeout", at(170))) // the same burst
	if len(alerts) != 1 {
		t.Fatalf("%d alerts, want 1: %+v", len(alerts), alerts)
	}
	a := alerts[0]
	want := poison.CauseOf(poison.Message{Headers: amqp.Table{runtime.HeaderFailure: "order 1: smtp timeout"}}).ID()
	if a.Consumer != "mailer" || a.Group != want || a.Count != 3 || !a.First.Equal(at(140)) || !a.Last.Equal(at(160)) || a.Cause.Text != "order <n>: smtp timeout" {
		t.Errorf("alert: %+v", a)
	}
	hook(poisonedAt("mailer", "order 7: smtp timeout", at(400))) // the burst passed
	for s := 401; s < 403; s++ {
		hook(poisonedAt("mailer", "order 8: smtp timeout", at(s)))
	}
	if len(alerts) != 2 || alerts[1].Count != 3 {
		t.Errorf("after a second burst: %+v", alerts)
	}
}
