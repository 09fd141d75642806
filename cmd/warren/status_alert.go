package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/warrenbus/warren/runtime/topology"
)

// The conditions warren status --fail-on can exit 1 on.
const (
	failMissing = "missing" // a queue of the topology does not exist
	failPoison  = "poison"  // a poison queue holds a message
	failIdle    = "idle"    // a work queue holds messages and no consumer is attached
	// failUnroutable: a delayed fact fell due with no consumer bound to it.
	failUnroutable = "unroutable"
	// failLag: a stream consumer is more than --max-lag offsets behind
	// its stream's tail.
	failLag = "lag"
)

var failConditions = []string{failMissing, failPoison, failIdle, failUnroutable, failLag}

// defaultMaxLag is --max-lag's default: a consumer that keeps up stays far
// below it between its offset stores, and one that stopped or fell behind
// a busy stream passes it soon.
const defaultMaxLag = 10000

// defaultFailOn keeps warren status quiet about what a healthy system may
// show for a moment (a poison message waiting for a human, a consumer
// restarting) and loud about a topology that is not there.
const defaultFailOn = failMissing

func failOnFlag() cli.Flag {
	return &cli.StringFlag{
		Name:  "fail-on",
		Value: defaultFailOn,
		Usage: "exit 1 when any of `CONDITIONS` holds: comma-separated missing, poison, idle, unroutable, lag; none for never",
	}
}

func maxLagFlag() cli.Flag {
	return &cli.Int64Flag{
		Name:  "max-lag",
		Value: defaultMaxLag,
		Usage: "with --fail-on lag, the `OFFSETS` a stream consumer may be behind its stream's tail (a super stream's consumer: the sum over its partitions)",
	}
}

// parseMaxLag reads --max-lag, which only --fail-on lag uses.
func parseMaxLag(c *cli.Context, failOn map[string]bool) (int64, error) {
	n := c.Int64("max-lag")
	switch {
	case n < 0:
		return 0, usageError(c, "--max-lag %d: expected 0 or more offsets", n)
	case c.IsSet("max-lag") && !failOn[failLag]:
		return 0, usageError(c, "--max-lag is the limit of --fail-on lag: add lag to --fail-on")
	}
	return n, nil
}

// parseFailOn reads --fail-on: a comma-separated subset of failConditions,
// or "none".
func parseFailOn(c *cli.Context) (map[string]bool, error) {
	on := map[string]bool{}
	value := c.String("fail-on")
	if value == "none" {
		return on, nil
	}
	for _, cond := range strings.Split(value, ",") {
		cond = strings.TrimSpace(cond)
		if !slices.Contains(failConditions, cond) {
			return nil, usageError(c, "--fail-on %q: expected a comma-separated list of %s, or none", value, strings.Join(failConditions, ", "))
		}
		on[cond] = true
	}
	return on, nil
}

// alerts writes one line to w per condition of failOn that holds, and
// reports whether any did. A missing queue or stream (streams: those of
// the stream consumers that do not exist) is always reported, since the
// figures of its consumer are incomplete, but fails only if failOn says so.
// declareHint is what the alerts advise when the topology is not
// declared: to run warren declare on dir, unless the topology has super
// streams and the broker (of version) has none, where declaring can only
// be refused.
func declareHint(top topology.Topology, version, dir string) string {
	if version != "" && !topology.SupportsSuperStreams(version) && slices.ContainsFunc(top.Exchanges, func(e topology.Exchange) bool { return e.SuperStream }) {
		return fmt.Sprintf("the topology has super streams, which need RabbitMQ 3.11 or later, and the broker runs %s: warren declare refuses them", version)
	}
	return "run warren declare " + dir
}

func alerts(w io.Writer, rows []consumerStatus, streams []string, delayed *delayedStatus, failOn map[string]bool, dir, hint, broker string) bool {
	failed, missing := false, false
	if len(streams) > 0 {
		missing = true
		failed = failOn[failMissing]
		fmt.Fprintf(w, "warren status: missing streams %s on %s\n", strings.Join(streams, ", "), broker)
	}
	if delayed != nil && len(delayed.Missing) > 0 {
		missing = true
		failed = failOn[failMissing]
		names := strings.Join(delayed.Missing, ", ")
		if n := len(delayed.Missing); n > 2 {
			names = fmt.Sprintf("%d queues, %s to %s", n, delayed.Missing[0], delayed.Missing[n-1])
		}
		fmt.Fprintf(w, "warren status: delay levels: missing %s on %s\n", names, broker)
	} else if delayed != nil && failOn[failUnroutable] && delayed.Unroutable > 0 {
		failed = true
		fmt.Fprintf(w, "warren status: %s fell due with no consumer bound; they wait in the unroutable lane for a person\n", count(delayed.Unroutable, "delayed fact"))
	}
	for _, r := range rows {
		if len(r.Missing) > 0 {
			missing = true
			failed = failed || failOn[failMissing]
			fmt.Fprintf(w, "warren status: consumer %s: missing queues %s on %s\n", r.Consumer, strings.Join(r.Missing, ", "), broker)
			continue
		}
		if failOn[failPoison] && r.Poison > 0 {
			failed = true
			fmt.Fprintf(w, "warren status: consumer %s: %s in its poison queue; see warren replay --consumer %s --list %s\n", r.Consumer, count(r.Poison, "message"), r.Consumer, dir)
		}
		if failOn[failIdle] && r.Work > 0 && r.Consumers == 0 {
			failed = true
			fmt.Fprintf(w, "warren status: consumer %s: %s waiting and no consumer attached\n", r.Consumer, count(r.Work, "message"))
		}
	}
	if missing {
		fmt.Fprintf(w, "warren status: the topology is not declared; %s\n", hint)
	}
	return failed
}

// lagAlerts writes one line to w per stream consumer more than maxLag
// offsets behind its stream's tail, and reports whether any was. A
// consumer of a super stream is behind by the sum of its partitions'
// lags, each partition behind named. Only consumers' own offset names
// count (a replay's catches up and is done), and only lags that are
// known: a missing stream fails as missing, one not read fails anyway, and
// a "next" or "last" consumer never started has nothing to read yet.
func lagAlerts(w io.Writer, rows []streamLag, maxLag int64) bool {
	type behind struct {
		stream, super string
		lag           int64
		parts         []string
	}
	var order []string
	by := map[string]*behind{}
	for _, r := range rows {
		if r.Consumer == "" || r.Lag == nil {
			continue
		}
		b := by[r.Consumer]
		if b == nil {
			b = &behind{stream: r.Stream, super: r.SuperStream}
			by[r.Consumer] = b
			order = append(order, r.Consumer)
		}
		b.lag += *r.Lag
		if *r.Lag > 0 {
			b.parts = append(b.parts, fmt.Sprintf("%s %d", r.Stream, *r.Lag))
		}
	}
	failed := false
	for _, name := range order {
		b := by[name]
		if b.lag <= maxLag {
			continue
		}
		failed = true
		where := "stream " + b.stream
		if b.super != "" {
			where = fmt.Sprintf("super stream %s (%s)", b.super, strings.Join(b.parts, ", "))
		}
		fmt.Fprintf(w, "warren status: consumer %s: %d offsets behind the tail of %s, more than --max-lag %d\n", name, b.lag, where, maxLag)
	}
	return failed
}
