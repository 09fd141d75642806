package prometheus_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/poison"
	"github.com/warrenbus/warren/runtime/topology"

	warrenprom "github.com/warrenbus/warren/contrib/prometheus"
)

const byCause = "warren_consumer_poisoned_by_cause_total"

// A consumer on the real broker poisons three facts for one cause (the
// order number masked) and two for a panic; the counter holds exactly
// those counts, under the group ids that poison.Groups reads from the
// poison queue.
func TestPoisonedByCauseOnTheBroker(t *testing.T) {
	m := warrenprom.New(warrenprom.Options{})
	r := runMailer(t, "prom-poison", topology.ConsumerSpec{Bindings: []string{"order.*"}, MaxAttempts: 1},
		m, func(ctx context.Context, d runtime.Delivery, o order) error {
			if o.N%2 == 0 {
				panic("template missing")
			}
			return fmt.Errorf("no such address for order %d", o.N)
		}, runtime.WithPoisonHook(m.PoisonHook()))
	r.publish(t, 1, 5)
	testenv.Eventually(t, "five facts counted by cause", func() bool { return counterValue(t, r.reg, byCause) == 5 })
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}

	groups, err := poison.Groups(context.Background(), r.conn, r.spec, poison.FromPoison)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{}
	for _, g := range groups {
		want["mailer/"+g.Cause.Kind+"/"+g.ID] = float64(g.Count)
	}
	if len(want) != 2 {
		t.Fatalf("the poison queue holds groups %v, want two", groups)
	}
	got := causeSeries(t, r.reg)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s = %v, want %v (the poison queue's groups)", byCause, got, want)
	}
	kinds := map[string]float64{}
	for _, g := range groups {
		kinds[g.Cause.Kind] += float64(g.Count)
	}
	if kinds[poison.KindHandler] != 3 || kinds[poison.KindPanic] != 2 {
		t.Errorf("groups by kind %v, want 3 handler and 2 panic", kinds)
	}
	if got := counterValue(t, r.reg, "warren_consumer_poisoned_total"); got != 5 {
		t.Errorf("poisoned_total = %v, want 5 as by cause", got)
	}
}

// Each consumer keeps a series for its first PoisonCauses causes; later
// causes count as "other" under their kind, while a cause that has a
// series goes on counting there.
func TestPoisonedByCauseIsBounded(t *testing.T) {
	m := warrenprom.New(warrenprom.Options{PoisonCauses: 2})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	hook := m.PoisonHook()
	fail := func(consumer, failure string) {
		hook(runtime.PoisonEvent{Consumer: consumer, Failure: failure, Headers: map[string]any{runtime.HeaderFailure: failure}})
	}
	id := func(failure string) string {
		return poison.CauseOf(poison.Message{Failure: failure, Headers: map[string]any{runtime.HeaderFailure: failure}}).ID()
	}
	// Free text the masking keeps: every word a cause of its own.
	words := []string{"alpha", "bravo", "charlie", "delta", "echo"}
	for _, w := range words {
		fail("mailer", "mailbox full: "+w)
	}
	fail("mailer", "mailbox full: alpha")
	fail("mailer", "handler panicked: boom")
	fail("billing", "mailbox full: echo")

	want := map[string]float64{
		"mailer/handler/" + id("mailbox full: alpha"): 2,
		"mailer/handler/" + id("mailbox full: bravo"): 1,
		"mailer/handler/other":                        3,
		"mailer/panic/other":                          1,
		"billing/handler/" + id("mailbox full: echo"): 1,
	}
	got := causeSeries(t, reg)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s = %v, want %v", byCause, got, want)
	}

	for i := range 1000 {
		fail("flood", "unexpected reply from "+spell(i))
	}
	series := 0
	for k := range causeSeries(t, reg) {
		if len(k) > 6 && k[:6] == "flood/" {
			series++
		}
	}
	if series != 3 {
		t.Errorf("1000 distinct causes made %d series, want 3 (two ids and other)", series)
	}

	kindOnly := warrenprom.New(warrenprom.Options{PoisonCauses: -1})
	reg = prometheus.NewPedanticRegistry()
	reg.MustRegister(kindOnly)
	kindOnly.PoisonHook()(runtime.PoisonEvent{Consumer: "mailer", Failure: "x", Headers: map[string]any{runtime.HeaderFailure: "x"}})
	if got := causeSeries(t, reg); fmt.Sprint(got) != "map[mailer/handler/other:1]" {
		t.Errorf("PoisonCauses -1: %v, want the kind alone", got)
	}
}

// spell writes i in letters (a, b, ..., ba, ...), which masking keeps.
func spell(i int) string {
	s := string(rune('a' + i%26))
	if i >= 26 {
		s = spell(i/26) + s
	}
	return s
}

// causeSeries reads the by-cause counter of reg as consumer/kind/cause
// to value.
func causeSeries(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != byCause {
			continue
		}
		for _, s := range f.GetMetric() {
			l := map[string]string{}
			for _, p := range s.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			out[l["consumer"]+"/"+l["kind"]+"/"+l["cause"]] = s.GetCounter().GetValue()
		}
	}
	return out
}
