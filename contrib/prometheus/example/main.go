// Command example is a service that consumes order.placed facts and
// exposes its consumer's counters and handler latencies at /metrics for
// Prometheus to scrape.
//
//	go run ./example -listen 127.0.0.1:2112
//	curl -s 127.0.0.1:2112/metrics | grep warren_
//
// It publishes one fact a second to itself so there is something to see;
// every third one fails once and is retried. Its consumer counts what it
// would poison by cause (warren_consumer_poisoned_by_cause_total).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	warrenprom "github.com/warrenbus/warren/contrib/prometheus"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/topology"
)

var orderPlaced = runtime.Fact{RoutingKey: "order.placed", Version: 1}

type order struct {
	N int `json:"n"`
}

func main() {
	listen := flag.String("listen", "127.0.0.1:2112", "serve /metrics on `ADDR`")
	every := flag.Duration("every", time.Second, "publish a fact every `DURATION`")
	flag.Parse()
	url := os.Getenv("WARREN_AMQP_URL")
	if url == "" {
		url = "amqp://guest:guest@127.0.0.1:5672/"
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("metrics at http://%s/metrics", l.Addr())
	if err := run(ctx, url, l, *every); err != nil {
		log.Fatal(err)
	}
}

// run serves /metrics on l and runs the consumer and the publisher until
// ctx ends.
func run(ctx context.Context, url string, l net.Listener, every time.Duration) error {
	top, err := topology.Build(topology.Spec{
		Exchanges: topology.Exchanges{Events: "example.events", Retry: "example.retry", Dead: "example.dead"},
		Consumers: []topology.ConsumerSpec{{
			Name: "example-mailer", Bindings: []string{"order.#"}, Backoff: []time.Duration{time.Second},
		}},
	})
	if err != nil {
		return err
	}
	metrics := warrenprom.New(warrenprom.Options{ConstLabels: prometheus.Labels{"service": "example"}})
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{url}, Topology: &top, Metrics: metrics})
	if err != nil {
		return err
	}
	defer conn.Close()
	spec, _ := top.Consumer("example-mailer")
	consumer, err := runtime.NewConsumer(conn, spec, []runtime.Route{
		runtime.Handle(orderPlaced, func(ctx context.Context, d runtime.Delivery, o order) error {
			if o.N%3 == 0 && d.Attempt == 1 {
				return fmt.Errorf("order %d: mail server busy", o.N)
			}
			return nil
		}),
	}, runtime.WithPoisonHook(metrics.PoisonHook()))
	if err != nil {
		return err
	}
	pub, err := runtime.NewPublisher(conn, "example.events")
	if err != nil {
		return err
	}
	defer pub.Close()

	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	errs := make(chan error, 3)
	go func() { errs <- srv.Serve(l) }()
	go func() { errs <- consumer.Run(ctx) }()
	go func() { errs <- publish(ctx, pub, every) }()

	var first error
	select {
	case first = <-errs:
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && first == nil {
		first = err
	}
	if errors.Is(first, http.ErrServerClosed) {
		first = nil
	}
	return first
}

func publish(ctx context.Context, pub *runtime.Publisher, every time.Duration) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for n := 1; ; n++ {
		if _, err := pub.Publish(ctx, orderPlaced, order{N: n}); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
