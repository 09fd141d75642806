package main

import (
	"github.com/urfave/cli/v2"

	"github.com/warrenbus/warren/cmd/warren/internal/console"
)

// managementFlag is --management-url, the RabbitMQ management API, which
// alone lists what the broker's AMQP side does not: rates, and the
// arguments consumers attached with. for says what the command reads there.
func managementFlag(forWhat string) cli.Flag {
	return &cli.StringFlag{Name: "management-url", EnvVars: []string{"WARREN_MANAGEMENT_URL"},
		Usage: "RabbitMQ management API `URL` (http://HOST:15672/), for " + forWhat}
}

// managementOf returns the management API of --management-url, nil when it
// is not given; credentials come from its URL, else from amqpURL's. A
// value that is no http(s) URL is a wrong command line (exit 2).
func managementOf(c *cli.Context, amqpURL string) (*console.Management, error) {
	raw := c.String("management-url")
	if raw == "" {
		return nil, nil
	}
	m, err := console.NewManagement(raw, amqpURL)
	if err != nil {
		return nil, usageError(c, "%v", err)
	}
	return m, nil
}
