package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/warrenbus/warren/runtime"
)

// streamPortEnv names the environment variable read when --stream-port is
// not given, as the tests and examples read it.
const streamPortEnv = "WARREN_STREAM_PORT"

// streamPortFlag is the port of the brokers' stream protocol: one that
// every node shares, or one per --url (several nodes on one host).
func streamPortFlag() cli.Flag {
	return &cli.StringSliceFlag{Name: "stream-port",
		Usage: "the brokers' stream protocol `PORT` (rabbitmq_stream plugin), where stream consumers keep their offsets: one that every node shares, " +
			"or repeat it (or comma-separate) for one per --url, in the same order (default: $" + streamPortEnv + ", else " + strconv.Itoa(runtime.DefaultStreamPort) + ")"}
}

// streamPorts is what --stream-port says of the brokers of --url, in the
// terms of runtime.Config: a port every node shares (0: the default), or
// one per URL.
type streamPorts struct {
	shared int
	each   []int
}

// streamPortsOf reads --stream-port, else $WARREN_STREAM_PORT, for the
// broker URLs urls. A wrong port, or a count that is neither one nor one
// per URL, is a usage error naming where it came from.
func streamPortsOf(c *cli.Context, urls []string) (streamPorts, error) {
	from, raw := "--stream-port", c.StringSlice("stream-port")
	if len(raw) == 0 {
		if env := os.Getenv(streamPortEnv); env != "" {
			from, raw = "$"+streamPortEnv, strings.Split(env, ",")
		}
	}
	sp, err := parseStreamPorts(raw, len(urls), urlSource(c))
	if err != nil {
		return streamPorts{}, usageError(c, "%s: %v", from, err)
	}
	return sp, nil
}

// parseStreamPorts reads the ports raw for the n broker URLs given by
// urlsFrom: none (the default), one that every node shares, or one per URL.
func parseStreamPorts(raw []string, n int, urlsFrom string) (streamPorts, error) {
	ports := make([]int, len(raw))
	for i, s := range raw {
		p, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || p < 1 || p > 65535 {
			return streamPorts{}, fmt.Errorf("%q: expected a port number, 1 to 65535", s)
		}
		ports[i] = p
	}
	switch len(ports) {
	case 0:
		return streamPorts{}, nil
	case 1:
		return streamPorts{shared: ports[0]}, nil
	case n:
		return streamPorts{each: ports}, nil
	}
	return streamPorts{}, fmt.Errorf("%d ports for %s (%s): expected one port that every node shares, or one per URL in the same order",
		len(ports), count(n, "broker URL"), urlsFrom)
}

// urlSource says where brokerURLs found the URLs.
func urlSource(c *cli.Context) string {
	switch {
	case len(c.StringSlice("url")) > 0:
		return "--url"
	case os.Getenv("WARREN_AMQP_URL") != "":
		return "$WARREN_AMQP_URL"
	}
	return "the default URL"
}
