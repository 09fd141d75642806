// Command streambench measures, in one run, publishing and consuming the
// same 1 KiB fact through a quorum queue, a stream (published through the
// events exchange, and directly: "publish": "direct") and (on RabbitMQ
// 3.11 or later) a super stream of 3 partitions, with warren's runtime, beside
// the stream protocol's own Go client publishing and reading a stream:
// throughput, client CPU per fact, and end-to-end latency at a fixed rate.
// The fact is the benchmarks' order (bench/events/order-placed.json):
// warren publishes and consumes its generated type, validated and decoded
// as a generated consumer does; the raw client marshals and unmarshals a
// plain struct of the same fields with encoding/json, checking nothing.
//
// Rounds interleave the paths, so that the shared machine's noise falls on
// all of them alike; each figure is reported as the median and range of
// its rounds. Every round declares fresh queues and streams and deletes
// them after.
//
//	go run ./cmd/streambench -n 50000 -rounds 3            # machine's broker
//	set -a; eval "$(../scripts/rabbitmq4 env)"; set +a
//	go run ./cmd/streambench -n 50000 -rounds 3 -super     # RabbitMQ 4 node
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	goruntime "runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	samqp "github.com/rabbitmq/rabbitmq-stream-go-client/pkg/amqp"
	"github.com/rabbitmq/rabbitmq-stream-go-client/pkg/stream"

	"github.com/warrenbus/warren/bench/benchevents"
	"github.com/warrenbus/warren/bench/internal/orders"
	"github.com/warrenbus/warren/runtime"
	_ "github.com/warrenbus/warren/runtime/streamoffset"
	"github.com/warrenbus/warren/runtime/topology"
)

// orderPlaced is the generated fact of the benchmarks' order, with its id
// as the ordering key that partitions a super stream, read from the value
// as the code generated for a schema with "x-ordering-key" reads it (the
// publisher would otherwise parse the JSON it just wrote to find it).
var orderPlaced = func() runtime.Fact {
	f := benchevents.FactOrderPlaced
	f.OrderingKey = "/order_id"
	f.KeyOf = func(payload any) (string, bool) {
		v, ok := payload.(*benchevents.OrderPlaced)
		if !ok {
			return "", false
		}
		return v.OrderID, true
	}
	return f
}()

// samples are the orders published, a thousand, each sent with placed_at
// set to the time it was sent: the consumer's latency is measured from it.
var samples, plains = func() ([]benchevents.OrderPlaced, []orders.PlainOrder) {
	o, p := make([]benchevents.OrderPlaced, 1000), make([]orders.PlainOrder, 1000)
	for i := range o {
		o[i], p[i] = orders.Order(i), orders.Plain(i)
	}
	return o, p
}()

// sample returns the order to send i-th, sent now.
func sample(i int) *benchevents.OrderPlaced {
	o := samples[i%len(samples)]
	o.PlacedAt = time.Now().UTC()
	return &o
}

// plainSample is sample as the plain struct.
func plainSample(i int) orders.PlainOrder {
	p := plains[i%len(plains)]
	p.PlacedAt = time.Now().UTC()
	return p
}

// newOrder is what a generated consumer passes runtime.HandleEach: the
// value each fact is decoded into, validated against its schema.
func newOrder() any { return new(benchevents.OrderPlaced) }

const window = 256 // publishes in flight

type config struct {
	url          string
	streamPort   int
	n            int
	rounds       int
	rate         int
	latencyFor   time.Duration
	super        bool
	crc          bool
	replay       int
	readFor      time.Duration
	socketBuffer int
	paths        string
	cpuProfile   string
	memProfile   string
	storeEvery   time.Duration
	brokerPID    int
}

func main() {
	var c config
	flag.StringVar(&c.url, "url", env("WARREN_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/"), "AMQP URL")
	flag.IntVar(&c.streamPort, "stream-port", atoi(env("WARREN_STREAM_PORT", "5552")), "stream protocol port")
	flag.IntVar(&c.n, "n", 50000, "facts per round and path")
	flag.IntVar(&c.rounds, "rounds", 3, "rounds")
	flag.IntVar(&c.rate, "rate", 2000, "facts per second in the latency phase")
	flag.DurationVar(&c.latencyFor, "latency-for", 5*time.Second, "length of the latency phase")
	flag.BoolVar(&c.super, "super", false, "include a super stream of 3 partitions (RabbitMQ 3.11 or later)")
	flag.BoolVar(&c.crc, "crc", true, "the stream client checks each chunk's CRC")
	flag.IntVar(&c.replay, "replay", 0, "after the rounds, store this many facts in a stream and measure a new consumer reading them all")
	flag.DurationVar(&c.readFor, "read-for", 30*time.Second, "longest a backlog read may take; a slower one reports the rate it reached")
	flag.IntVar(&c.socketBuffer, "client-socket-buffer", 0, "the stream client's socket buffers in bytes; 0 leaves them to the kernel, as warren does (the client's own default is 8192)")
	flag.StringVar(&c.paths, "paths", "", "comma-separated paths to run (quorum, stream, stream-direct, stream-client, stream-producer, super-stream); empty for all")
	flag.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of each path's publish phase to FILE-<path>-publish-<round>.pprof and of each warren path's consume phase to FILE-<path>-<round>.pprof")
	flag.DurationVar(&c.storeEvery, "offset-store-interval", runtime.DefaultOffsetStoreInterval, "warren's stream consumers store their offset at most this often (runtime.WithOffsetStoreInterval); 0 as it advances")
	flag.StringVar(&c.memProfile, "memprofile", "", "record every allocation and write the allocations of each path's publish phase to FILE-<path>-publish-<round>.pprof (slows every path)")
	flag.IntVar(&c.brokerPID, "broker-pid", 0, "the broker's process id (beam.smp), on this machine: report its CPU per fact in each phase, beside the client's")
	flag.Parse()
	if c.memProfile != "" {
		goruntime.MemProfileRate = 1
	}
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "streambench:", err)
		os.Exit(1)
	}
}

// result is one path's figures in one round.
type result struct {
	pubRate, pubCPU   float64 // facts/s, µs of client CPU per fact
	pubAllocs         float64 // heap allocations per fact published
	consRate, consCPU float64
	// The broker's CPU per fact in each phase (µs), with -broker-pid.
	pubBroker, consBroker float64
	p50, p99              time.Duration
}

func run(c config) error {
	paths := []string{"quorum", "stream", "stream-direct", "stream-client", "stream-producer"}
	if c.super {
		paths = append(paths, "super-stream")
	}
	if c.paths != "" {
		paths = strings.Split(c.paths, ",")
	}
	has := func(p string) bool { return slices.Contains(paths, p) }
	all := map[string][]result{}
	for round := range c.rounds {
		for _, p := range paths {
			r, err := measure(c, p, round+1)
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", round+1, p, err)
			}
			fmt.Fprintf(os.Stderr, "round %d %-13s publish %8.0f/s %6.1fµs %5.1f allocs  consume %8.0f/s %6.1fµs  latency p50 %v p99 %v",
				round+1, p, r.pubRate, r.pubCPU, r.pubAllocs, r.consRate, r.consCPU, r.p50.Round(10*time.Microsecond), r.p99.Round(10*time.Microsecond))
			if c.brokerPID != 0 {
				fmt.Fprintf(os.Stderr, "  broker publish %.1fµs consume %.1fµs", r.pubBroker, r.consBroker)
			}
			fmt.Fprintln(os.Stderr)
			all[p] = append(all[p], r)
		}
	}
	if c.rounds == 0 {
		return replay(c)
	}
	fmt.Printf("\n%d facts of %d bytes per round and path, %d rounds; median (min–max)\n\n", c.n, len(envelopeOf(samples[0])), c.rounds)
	if c.brokerPID == 0 {
		fmt.Println("| path | publish facts/s | publish CPU µs/fact | publish allocs/fact | consume facts/s | consume CPU µs/fact | latency p50 | latency p99 |")
		fmt.Println("|---|---|---|---|---|---|---|---|")
	} else {
		fmt.Println("| path | publish facts/s | publish CPU µs/fact | publish allocs/fact | publish broker CPU µs/fact | consume facts/s | consume CPU µs/fact | consume broker CPU µs/fact | latency p50 | latency p99 |")
		fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	}
	for _, p := range paths {
		rs := all[p]
		f := func(get func(result) float64, prec int) string { return spread(rs, get, prec) }
		d := func(get func(result) time.Duration) string {
			return spread(rs, func(r result) float64 { return float64(get(r)) / 1e6 }, 2) + " ms"
		}
		cols := []string{f(func(r result) float64 { return r.pubRate }, 0), f(func(r result) float64 { return r.pubCPU }, 1),
			f(func(r result) float64 { return r.pubAllocs }, 1)}
		if c.brokerPID != 0 {
			cols = append(cols, f(func(r result) float64 { return r.pubBroker }, 1))
		}
		cols = append(cols, f(func(r result) float64 { return r.consRate }, 0), f(func(r result) float64 { return r.consCPU }, 1))
		if c.brokerPID != 0 {
			cols = append(cols, f(func(r result) float64 { return r.consBroker }, 1))
		}
		cols = append(cols, d(func(r result) time.Duration { return r.p50 }), d(func(r result) time.Duration { return r.p99 }))
		fmt.Printf("| %s | %s |\n", p, strings.Join(cols, " | "))
	}
	fmt.Println()
	ratio := func(a, b string, get func(result) float64) string {
		var xs []float64
		for i := range all[a] {
			xs = append(xs, get(all[a][i])/get(all[b][i]))
		}
		return spreadOf(xs, 2)
	}
	pub := func(r result) float64 { return r.pubRate }
	cons := func(r result) float64 { return r.consRate }
	if has("stream") && has("quorum") {
		fmt.Printf("stream/quorum: publish %s, consume %s\n", ratio("stream", "quorum", pub), ratio("stream", "quorum", cons))
	}
	if has("stream-direct") && has("quorum") {
		fmt.Printf("stream-direct/quorum: publish %s, consume %s\n", ratio("stream-direct", "quorum", pub), ratio("stream-direct", "quorum", cons))
	}
	if has("stream-direct") && has("stream-client") {
		fmt.Printf("stream-direct/stream-client: publish %s, consume %s\n", ratio("stream-direct", "stream-client", pub), ratio("stream-direct", "stream-client", cons))
	}
	if has("stream") && has("stream-client") {
		fmt.Printf("stream/stream-client: publish %s, consume %s\n", ratio("stream", "stream-client", pub), ratio("stream", "stream-client", cons))
	}
	if has("stream-producer") && has("quorum") && has("stream-client") {
		fmt.Printf("stream-producer/quorum: publish %s; stream-producer/stream-client: publish %s\n", ratio("stream-producer", "quorum", pub), ratio("stream-producer", "stream-client", pub))
	}
	if has("super-stream") && has("quorum") {
		fmt.Printf("super-stream/quorum: publish %s, consume %s\n", ratio("super-stream", "quorum", pub), ratio("super-stream", "quorum", cons))
	}
	if has("super-stream") && has("stream-client") {
		fmt.Printf("super-stream/stream-client: consume %s\n", ratio("super-stream", "stream-client", cons))
	}
	if c.replay > 0 {
		if err := replay(c); err != nil {
			return fmt.Errorf("replay: %w", err)
		}
	}
	return nil
}

// measure runs one path once: publish n facts, consume them as a backlog
// (a new consumer reading what is stored), then the latency phase.
func measure(c config, path string, round int) (result, error) {
	switch path {
	case "stream-client":
		return measureClient(c, false, path, round)
	case "stream-producer":
		return measureClient(c, true, path, round)
	}
	ctx := context.Background()
	suffix := randomSuffix()
	spec := topology.Spec{Exchanges: topology.Exchanges{Events: "bench.events." + suffix, Retry: "bench.retry." + suffix, Dead: "bench.dead." + suffix}}
	cs := topology.ConsumerSpec{Name: "bench-" + path + "-" + suffix, Bindings: []string{orderPlaced.RoutingKey}, Prefetch: 1000, Concurrency: 4, Backoff: []time.Duration{time.Second}}
	switch path {
	case "stream", "stream-direct", "super-stream":
		s := topology.StreamSpec{Name: "bench-log-" + suffix, Bindings: []string{orderPlaced.RoutingKey}, MaxAge: time.Hour}
		switch path {
		case "super-stream":
			s.Partitions = 3
		case "stream-direct":
			s.Direct = true
		}
		spec.Streams = []topology.StreamSpec{s}
		cs.Stream, cs.Start = s.Name, topology.Start{Kind: topology.StartFirst}
	}
	spec.Consumers = []topology.ConsumerSpec{cs}
	if cs.Stream != "" {
		// The latency phase's reader starts at the tail, whether or not
		// the backlog reader finished.
		live := cs
		live.Name, live.Start = cs.Name+"-live", topology.Start{Kind: topology.StartNext}
		spec.Consumers = append(spec.Consumers, live)
	}
	top, err := topology.Build(spec)
	if err != nil {
		return result{}, err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{c.url}, Topology: &top, StreamPort: c.streamPort, Logger: logger})
	if err != nil {
		return result{}, err
	}
	defer conn.Close()
	defer cleanup(c.url, top)
	pub, err := runtime.NewPublisher(conn, spec.Exchanges.Events)
	if err != nil {
		return result{}, err
	}
	defer pub.Close()

	var r result
	// Publish: window facts in flight, each confirmed.
	endPub, err := startProfiles(c, path+"-publish", round)
	if err != nil {
		return result{}, err
	}
	cpu0, a0, t0, b0 := cpuTime(), allocs(), time.Now(), brokerCPU(c.brokerPID)
	err = publishAll(ctx, c.n, func(i int) (*runtime.Pending, error) {
		return pub.PublishAsync(ctx, orderPlaced, sample(i))
	})
	r.pubRate, r.pubCPU = rate(c.n, time.Since(t0)), perFact(cpuTime()-cpu0, c.n)
	r.pubBroker = perFact(brokerCPU(c.brokerPID)-b0, c.n)
	r.pubAllocs = float64(allocs()-a0) / float64(c.n)
	endPub()
	if err != nil {
		return r, err
	}

	// Consume the backlog with a new consumer.
	var handled atomic.Int64
	lat := &latencies{}
	measuring := atomic.Bool{}
	handle := func(ctx context.Context, d runtime.Delivery, o benchevents.OrderPlaced) error {
		if measuring.Load() {
			lat.add(time.Since(o.PlacedAt))
		}
		handled.Add(1)
		return nil
	}
	handler := []runtime.Route{runtime.HandleEach(orderPlaced, newOrder, func(ctx context.Context, d runtime.Delivery, fact any) error {
		return handle(ctx, d, *fact.(*benchevents.OrderPlaced))
	})}
	storeEvery := c.storeEvery
	start := func(c topology.Consumer) (stop func() error, done chan error, err error) {
		var opts []runtime.ConsumerOption
		if c.Stream != "" {
			opts = append(opts, runtime.WithOffsetStoreInterval(storeEvery))
		}
		cons, err := runtime.NewConsumer(conn, c, handler, opts...)
		if err != nil {
			return nil, nil, err
		}
		cctx, cancel := context.WithCancel(ctx)
		done = make(chan error, 1)
		go func() { done <- cons.Run(cctx) }()
		return func() error { cancel(); return <-done }, done, nil
	}
	endProfile, err := startProfile(c.cpuProfile, path, round)
	if err != nil {
		return r, err
	}
	cpu0, t0, b0 = cpuTime(), time.Now(), brokerCPU(c.brokerPID)
	stop, done, err := start(top.Consumers[0])
	if err != nil {
		endProfile()
		return r, err
	}
	err = waitFor(&handled, int64(c.n), done, c.readFor)
	read := handled.Load()
	r.consRate, r.consCPU = rate(int(read), time.Since(t0)), perFact(cpuTime()-cpu0, int(read))
	r.consBroker = perFact(brokerCPU(c.brokerPID)-b0, int(read))
	endProfile()
	if errors.Is(err, errSlow) && len(top.Consumers) > 1 {
		fmt.Fprintf(os.Stderr, "%s: read %d of %d stored facts in %s\n", path, read, c.n, c.readFor)
		_ = stop()
		if stop, done, err = start(top.Consumers[1]); err != nil {
			return r, err
		}
		time.Sleep(time.Second) // the live reader attached
	} else if err != nil {
		_ = stop()
		return r, err
	}
	defer stop()

	// Latency at a fixed rate, publisher and consumer both running.
	handled.Store(0)
	measuring.Store(true)
	sent := paced(ctx, c.rate, c.latencyFor, func(i int) error {
		_, err := pub.Publish(ctx, orderPlaced, sample(i))
		return err
	})
	if err := waitFor(&handled, int64(sent), done, 0); err != nil && !errors.Is(err, errSlow) {
		return r, err
	}
	r.p50, r.p99 = lat.quantile(0.50), lat.quantile(0.99)
	return r, nil
}

// startProfiles starts the CPU profile of a phase and, with -memprofile,
// writes the allocations so far, so that what the phase allocated is the
// difference of the two files it leaves (go tool pprof -diff_base).
func startProfiles(c config, path string, round int) (end func(), err error) {
	endCPU, err := startProfile(c.cpuProfile, path, round)
	if err != nil || c.memProfile == "" {
		return endCPU, err
	}
	write := func(name string) {
		goruntime.GC() // the profile is as of the last GC
		f, err := os.Create(fmt.Sprintf("%s-%s-%d%s.pprof", c.memProfile, path, round, name))
		if err != nil {
			fmt.Fprintln(os.Stderr, "memprofile:", err)
			return
		}
		defer f.Close()
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			fmt.Fprintln(os.Stderr, "memprofile:", err)
		}
	}
	write("-before")
	return func() { endCPU(); write("") }, nil
}

// startProfile starts a CPU profile of a phase when prefix is set, and
// returns what ends it.
func startProfile(prefix, path string, round int) (end func(), err error) {
	if prefix == "" {
		return func() {}, nil
	}
	f, err := os.Create(fmt.Sprintf("%s-%s-%d.pprof", prefix, path, round))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// measureClient is the stream protocol's own client: a producer with
// confirms into a stream, then a consumer reading it from the first
// offset, then the latency phase with both.
//
// With envelope, each message is what warren would send over the stream
// protocol: the fact in a fresh envelope (UUIDv7, time) encoded as
// warren's publisher does, with its message id, content type, creation
// time and fact version as AMQP 1.0 properties: what publishing through
// the stream producer would cost warren.
func measureClient(c config, envelope bool, path string, round int) (result, error) {
	u, err := url.Parse(c.url)
	if err != nil {
		return result{}, err
	}
	pw, _ := u.User.Password()
	vhost := strings.TrimPrefix(u.Path, "/")
	if vhost == "" {
		vhost = "/"
	}
	envr, err := stream.NewEnvironment(stream.NewEnvironmentOptions().SetHost(u.Hostname()).SetPort(c.streamPort).
		SetUser(u.User.Username()).SetPassword(pw).SetVHost(vhost).
		SetAddressResolver(stream.AddressResolver{Host: u.Hostname(), Port: c.streamPort}).
		SetReadBuffer(c.socketBuffer).SetWriteBuffer(c.socketBuffer))
	if err != nil {
		return result{}, err
	}
	defer envr.Close()
	name := "bench-client-" + randomSuffix()
	if err := envr.DeclareStream(name, stream.NewStreamOptions().SetMaxAge(time.Hour)); err != nil {
		return result{}, err
	}
	defer envr.DeleteStream(name)
	prod, err := envr.NewProducer(name, stream.NewProducerOptions())
	if err != nil {
		return result{}, err
	}
	defer prod.Close()
	confirmed := make(chan int, 1024)
	go func() {
		for batch := range prod.NotifyPublishConfirmation() {
			ok := 0
			for _, m := range batch {
				if m.IsConfirmed() {
					ok++
				}
			}
			confirmed <- ok
		}
	}()
	var r result
	send := func(i int) error {
		f := plainSample(i)
		if !envelope {
			body, _ := json.Marshal(f)
			m := samqp.NewMessage(body)
			m.Properties = &samqp.MessageProperties{MessageID: randomSuffix(), ContentType: "application/json"}
			return prod.Send(m)
		}
		env, err := runtime.NewEnvelope(f)
		if err != nil {
			return err
		}
		body, err := json.Marshal(env)
		if err != nil {
			return err
		}
		m := samqp.NewMessage(body)
		m.Properties = &samqp.MessageProperties{MessageID: env.ID, ContentType: "application/json", CreationTime: env.OccurredAt}
		m.ApplicationProperties = map[string]any{"x-fact-version": int32(1), runtime.HeaderOrderingKey: f.OrderID}
		m.Annotations = samqp.Annotations{"x-routing-key": orderPlaced.RoutingKey}
		return prod.Send(m)
	}
	endPub, err := startProfiles(c, path+"-publish", round)
	if err != nil {
		return result{}, err
	}
	cpu0, a0, t0, b0 := cpuTime(), allocs(), time.Now(), brokerCPU(c.brokerPID)
	inFlight := 0
	got := 0
	for i := range c.n {
		for inFlight >= window {
			k := <-confirmed
			got, inFlight = got+k, inFlight-k
		}
		if err := send(i); err != nil {
			return r, err
		}
		inFlight++
	}
	for got < c.n {
		k := <-confirmed
		got += k
	}
	r.pubRate, r.pubCPU = rate(c.n, time.Since(t0)), perFact(cpuTime()-cpu0, c.n)
	r.pubBroker = perFact(brokerCPU(c.brokerPID)-b0, c.n)
	r.pubAllocs = float64(allocs()-a0) / float64(c.n)
	endPub()

	var handled atomic.Int64
	lat := &latencies{}
	measuring := atomic.Bool{}
	handle := func(_ stream.ConsumerContext, m *samqp.Message) {
		var f orders.PlainOrder
		body := m.GetData()
		if envelope {
			var env runtime.Envelope
			if json.Unmarshal(body, &env) == nil {
				body = env.Payload
			}
		}
		if json.Unmarshal(body, &f) == nil && measuring.Load() {
			lat.add(time.Since(f.PlacedAt))
		}
		handled.Add(1)
	}
	opts := func(from stream.OffsetSpecification) *stream.ConsumerOptions {
		return stream.NewConsumerOptions().SetOffset(from).SetCRCCheck(c.crc)
	}
	cpu0, t0, b0 = cpuTime(), time.Now(), brokerCPU(c.brokerPID)
	cons, err := envr.NewConsumer(name, handle, opts(stream.OffsetSpecification{}.First()))
	if err != nil {
		return r, err
	}
	err = waitFor(&handled, int64(c.n), nil, c.readFor)
	read := handled.Load()
	r.consRate, r.consCPU = rate(int(read), time.Since(t0)), perFact(cpuTime()-cpu0, int(read))
	r.consBroker = perFact(brokerCPU(c.brokerPID)-b0, int(read))
	_ = cons.Close()
	if err != nil && !errors.Is(err, errSlow) {
		return r, err
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "client: read %d of %d stored facts in %s\n", read, c.n, c.readFor)
	}
	if cons, err = envr.NewConsumer(name, handle, opts(stream.OffsetSpecification{}.Next())); err != nil {
		return r, err
	}
	defer cons.Close()
	time.Sleep(time.Second) // attached at the tail
	handled.Store(0)
	measuring.Store(true)
	sent := paced(context.Background(), c.rate, c.latencyFor, func(i int) error {
		if err := send(i); err != nil {
			return err
		}
		// Each one confirmed, as a warren Publish waits for its confirm.
		<-confirmed
		return nil
	})
	if err := waitFor(&handled, int64(sent), nil, 0); err != nil && !errors.Is(err, errSlow) {
		return r, err
	}
	r.p50, r.p99 = lat.quantile(0.50), lat.quantile(0.99)
	return r, nil
}

// replay stores n facts in a stream, then measures a new stream consumer
// reading them all from the first, against the same consumer's live rate
// measured by the rounds.
func replay(c config) error {
	ctx := context.Background()
	suffix := randomSuffix()
	spec := topology.Spec{Exchanges: topology.Exchanges{Events: "bench.events." + suffix, Retry: "bench.retry." + suffix, Dead: "bench.dead." + suffix},
		Streams: []topology.StreamSpec{{Name: "bench-replay-" + suffix, Bindings: []string{orderPlaced.RoutingKey}, MaxAge: time.Hour}}}
	spec.Consumers = []topology.ConsumerSpec{{Name: "bench-replayer-" + suffix, Bindings: []string{orderPlaced.RoutingKey}, Stream: spec.Streams[0].Name,
		Start: topology.Start{Kind: topology.StartFirst}, Prefetch: 1000, Concurrency: 4, Backoff: []time.Duration{time.Second}}}
	top, err := topology.Build(spec)
	if err != nil {
		return err
	}
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{c.url}, Topology: &top, StreamPort: c.streamPort})
	if err != nil {
		return err
	}
	defer conn.Close()
	defer cleanup(c.url, top)
	pub, err := runtime.NewPublisher(conn, spec.Exchanges.Events)
	if err != nil {
		return err
	}
	t0 := time.Now()
	if err := publishAll(ctx, c.replay, func(i int) (*runtime.Pending, error) {
		return pub.PublishAsync(ctx, orderPlaced, sample(i))
	}); err != nil {
		return err
	}
	fmt.Printf("replay: stored %d facts in %s\n", c.replay, time.Since(t0).Round(time.Millisecond))
	var handled atomic.Int64
	cons, err := runtime.NewConsumer(conn, top.Consumers[0], []runtime.Route{runtime.HandleEach(orderPlaced, newOrder, func(ctx context.Context, d runtime.Delivery, fact any) error {
		handled.Add(1)
		return nil
	})})
	if err != nil {
		return err
	}
	cctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	cpu0 := cpuTime()
	t0 = time.Now()
	go func() { done <- cons.Run(cctx) }()
	err = waitFor(&handled, int64(c.replay), done, 0)
	el := time.Since(t0)
	stop()
	<-done
	if err != nil {
		return err
	}
	fmt.Printf("replay: a new stream consumer read %d stored facts in %s: %.0f facts/s, %.1f µs CPU per fact\n",
		c.replay, el.Round(time.Millisecond), rate(c.replay, el), perFact(cpuTime()-cpu0, c.replay))
	return nil
}

// publishAll publishes n facts keeping window confirms outstanding.
func publishAll(ctx context.Context, n int, publish func(i int) (*runtime.Pending, error)) error {
	pending := make(chan *runtime.Pending, window)
	errc := make(chan error, 1)
	go func() {
		var first error
		for p := range pending {
			if err := p.Wait(ctx); err != nil && first == nil {
				first = err
			}
		}
		errc <- first
	}()
	for i := range n {
		p, err := publish(i)
		if err != nil {
			close(pending)
			<-errc
			return err
		}
		pending <- p
	}
	close(pending)
	return <-errc
}

// paced calls send at rate per second for d, and returns how many it sent.
func paced(ctx context.Context, rate int, d time.Duration, send func(i int) error) int {
	tick := time.Second / time.Duration(rate)
	end := time.Now().Add(d)
	next := time.Now()
	i := 0
	for time.Now().Before(end) {
		if err := send(i); err != nil {
			fmt.Fprintln(os.Stderr, "latency phase:", err)
			break
		}
		i++
		next = next.Add(tick)
		if w := time.Until(next); w > 0 {
			time.Sleep(w)
		}
	}
	return i
}

// errSlow is waitFor's answer when the time limit passed first.
var errSlow = errors.New("time limit passed")

// waitFor waits until counter reaches n, the consumer's Run ends, or
// limit passes (10 minutes when 0).
func waitFor(counter *atomic.Int64, n int64, done <-chan error, limit time.Duration) error {
	if limit == 0 {
		limit = 10 * time.Minute
	}
	deadline := time.Now().Add(limit)
	for counter.Load() < n {
		select {
		case err := <-done:
			return fmt.Errorf("consumer stopped after %d of %d facts: %v", counter.Load(), n, err)
		case <-time.After(2 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d facts: %w", counter.Load(), n, errSlow)
		}
	}
	return nil
}

type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) { l.mu.Lock(); l.d = append(l.d, d); l.mu.Unlock() }

func (l *latencies) quantile(q float64) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.d) == 0 {
		return 0
	}
	s := slices.Clone(l.d)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// cleanup deletes a round's queues, streams and exchanges.
func cleanup(u string, top topology.Topology) {
	conn, err := amqp.Dial(u)
	if err != nil {
		return
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return
	}
	for _, q := range top.Queues {
		_, _ = ch.QueueDelete(q.Name, false, false, false)
	}
	for _, e := range top.Exchanges {
		_ = ch.ExchangeDelete(e.Name, false, false)
	}
}

// envelopeOf returns o's message body as warren publishes it.
func envelopeOf(o benchevents.OrderPlaced) []byte {
	payload, _ := json.Marshal(&o)
	b, _ := json.Marshal(runtime.Envelope{ID: "0196f1a2-0000-7000-8000-000000000000", OccurredAt: time.Now().UTC(), Payload: payload})
	return b
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// brokerCPU is the user and system time the process pid (the broker's
// beam.smp) has spent so far, from /proc, in the kernel's clock ticks of
// 10 ms; 0 for pid 0. A broker that shares the machine's cores with the
// client takes its share of every fact: a phase's broker CPU per fact
// says which side a difference in rate comes from.
func brokerCPU(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		fmt.Fprintln(os.Stderr, "streambench: broker CPU:", err)
		return 0
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces: state is the first, utime the 12th and stime the 13th.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	user, _ := strconv.ParseInt(f[11], 10, 64)
	sys, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(user+sys) * 10 * time.Millisecond
}

// allocs is the number of heap allocations so far, read without stopping
// the world.
func allocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:objects"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func rate(n int, d time.Duration) float64 { return float64(n) / d.Seconds() }

func perFact(cpu time.Duration, n int) float64 { return float64(cpu.Microseconds()) / float64(n) }

func spread(rs []result, get func(result) float64, prec int) string {
	var xs []float64
	for _, r := range rs {
		xs = append(xs, get(r))
	}
	return spreadOf(xs, prec)
}

func spreadOf(xs []float64, prec int) string {
	if len(xs) == 0 {
		return "–"
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	med := s[len(s)/2]
	return fmt.Sprintf("%.*f (%.*f–%.*f)", prec, med, prec, s[0], prec, s[len(s)-1])
}

func randomSuffix() string {
	b := make([]byte, 6)
	_, _ = io.ReadFull(rand.Reader, b)
	return hex.EncodeToString(b)
}

func env(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }
