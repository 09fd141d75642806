package prometheus_test

import (
	"log"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/warrenbus/warren/runtime"

	warrenprom "github.com/warrenbus/warren/contrib/prometheus"
)

// A service counts what its consumers poison by cause: one Metrics for
// runtime.Config.Metrics and, through its PoisonHook, for each consumer's
// runtime.WithPoisonHook. Here the hook is called as a consumer calls it,
// for three facts of two causes; the order numbers are masked, so the
// first two share a cause.
func ExampleMetrics_PoisonHook() {
	m := warrenprom.New(warrenprom.Options{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)

	hook := m.PoisonHook()
	_ = runtime.WithPoisonHook(hook) // for runtime.NewConsumer, or a generated New...Consumer

	for _, failure := range []string{
		"no such address for order 17",
		"no such address for order 18",
		"handler panicked: template missing",
	} {
		hook(runtime.PoisonEvent{Consumer: "order-mailer", Failure: failure,
			Headers: map[string]any{runtime.HeaderFailure: failure}})
	}

	// What /metrics shows of it:
	families, err := reg.Gather()
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "warren_consumer_poisoned_by_cause_total" {
			if _, err := expfmt.MetricFamilyToText(os.Stdout, f); err != nil {
				log.Fatal(err)
			}
		}
	}
	// Output:
	// # HELP warren_consumer_poisoned_by_cause_total Facts copied to the poison queue, by cause kind and cause (the group id of warren poison groups, or "other" past the first causes of a consumer).
	// # TYPE warren_consumer_poisoned_by_cause_total counter
	// warren_consumer_poisoned_by_cause_total{cause="d9144f6322ed",consumer="order-mailer",kind="panic"} 1
	// warren_consumer_poisoned_by_cause_total{cause="ec932e3d719c",consumer="order-mailer",kind="handler"} 2
}
