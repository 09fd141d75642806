package main

// Helpers shared by the commands that read a schema directory for its
// topology (topology, declare, status, replay) and by those that talk
// to the broker.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/urfave/cli/v2"

	"github.com/warrenbus/warren/generator/model"
	"github.com/warrenbus/warren/internal/secret"
	"github.com/warrenbus/warren/internal/suggest"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/poison"
	"github.com/warrenbus/warren/runtime/topology"
)

// defaultAMQPURL is the broker of a development machine.
const defaultAMQPURL = "amqp://guest:guest@127.0.0.1:5672/"

// consumerOf finds a consumer of the model by name, or says which exist,
// the one the name is a slip of first.
func consumerOf(m *model.Model, name string) (topology.Consumer, error) {
	if c, ok := m.Topology.Consumer(name); ok {
		return c, nil
	}
	var names []string
	for _, c := range m.Consumers {
		names = append(names, c.Name)
	}
	if len(names) == 0 {
		return topology.Consumer{}, fmt.Errorf("consumer %q: the manifest declares no consumers", name)
	}
	var meant string
	if s, ok := suggest.Closest(name, names); ok {
		meant = fmt.Sprintf(" did you mean %q?", s)
	}
	return topology.Consumer{}, fmt.Errorf("consumer %q: not in the manifest;%s expected one of %s", name, meant, strings.Join(names, ", "))
}

// flagConsumer finds the consumer a --consumer value names. The manifest
// says which consumers there are before anything is dialled, so a name it
// does not declare is a wrong command line: exit 2, with the manifest's
// consumers and the usage line.
func flagConsumer(c *cli.Context, m *model.Model, name string) (topology.Consumer, error) {
	tc, err := consumerOf(m, name)
	if err != nil {
		return tc, usageError(c, "--consumer: %v", err)
	}
	return tc, nil
}

// brokerFlags are the flags of every command that connects to the broker.
func brokerFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "url", Usage: "broker `URL`, amqp:// or amqps://; repeat for the nodes of a cluster (default: $WARREN_AMQP_URL, else " + defaultAMQPURL + ")"},
		&cli.DurationFlag{Name: "timeout", Value: 30 * time.Second, Usage: "give up connecting to the broker after `DURATION`"},
	}
}

// brokerURLs returns the --url values, else WARREN_AMQP_URL, else the
// development default.
func brokerURLs(c *cli.Context) []string {
	if urls := c.StringSlice("url"); len(urls) > 0 {
		return urls
	}
	if u := os.Getenv("WARREN_AMQP_URL"); u != "" {
		return []string{u}
	}
	return []string{defaultAMQPURL}
}

// dialBroker connects through the runtime, as every service does, to the
// first of urls that answers, giving up after --timeout. The runtime
// checks the URLs and redacts their passwords in every error; the CLI has
// no dialler of its own.
func dialBroker(c *cli.Context, urls []string) (*runtime.Conn, error) {
	return dialBrokerWith(c, runtime.Config{URLs: urls})
}

// dialBrokerWith dials cfg (its URLs, and what else the command sets) as
// every command does: quiet, named after the command, within --timeout.
func dialBrokerWith(c *cli.Context, cfg runtime.Config) (*runtime.Conn, error) {
	if err := checkBrokerFlags(c, cfg.URLs); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(c.Context, c.Duration("timeout"))
	defer cancel()
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.ConnectionName = "warren " + c.Command.Name
	cfg.DialTimeout = c.Duration("timeout")
	conn, err := runtime.Dial(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to the broker: %w", err)
	}
	return conn, nil
}

// checkBrokerFlags refuses, as a wrong command line (exit 2), a --timeout
// that leaves no time to connect and a broker URL that is no AMQP URL,
// naming where the URL came from (--url or WARREN_AMQP_URL) with its
// password redacted, before anything is dialled.
func checkBrokerFlags(c *cli.Context, urls []string) error {
	if d := c.Duration("timeout"); d <= 0 {
		return usageError(c, "--timeout %s: expected a positive duration such as 30s", d)
	}
	from := "--url"
	if len(c.StringSlice("url")) == 0 {
		from = "WARREN_AMQP_URL"
	}
	for _, u := range urls {
		if err := runtime.CheckURL(u); err != nil {
			return usageError(c, "%s %s: %v", from, secret.URL(u), err)
		}
	}
	return nil
}

// whereMissing rewords, in err, the error of a queue that does not exist
// (poison.NoQueueError) to name the broker and vhost the command asked,
// the URL as given with its password masked: a queue missing on a broker
// where the topology is declared is most often asked of another vhost,
// or of the development default for want of --url. Any other error is
// returned as it is.
func whereMissing(c *cli.Context, conn *runtime.Conn, err error) error {
	var nq *poison.NoQueueError
	if err == nil || !errors.As(err, &nq) {
		return err
	}
	urls := brokerURLs(c)
	shown := shownURLs(urls)
	at := urls[0]
	if conn != nil && conn.URL() != "" {
		shown, at = conn.URL(), conn.URL() // the node that answered
	}
	vhost := "?"
	if u, perr := amqp.ParseURI(at); perr == nil {
		vhost = u.Vhost
	}
	ask := "or give --url (or WARREN_AMQP_URL) the broker and vhost the services use: without either, warren asks the development default"
	switch urlSource(c) {
	case "--url":
		ask = "or is --url the broker and vhost the services use?"
	case "$WARREN_AMQP_URL":
		ask = "or is WARREN_AMQP_URL the broker and vhost the services use?"
	}
	text := fmt.Sprintf("queue %q does not exist on %s (vhost %q): declare the topology first, %s", nq.Queue, shown, vhost, ask)
	return &rewordedError{err: err, text: strings.Replace(err.Error(), nq.Error(), text, 1)}
}

// rewordedError is err with another text; errors.Is and errors.As still
// see err.
type rewordedError struct {
	err  error
	text string
}

func (e *rewordedError) Error() string { return e.text }
func (e *rewordedError) Unwrap() error { return e.err }

// shownURLs lists urls with their passwords redacted.
func shownURLs(urls []string) string {
	shown := make([]string, len(urls))
	for i, u := range urls {
		shown[i] = secret.URL(u)
	}
	return strings.Join(shown, ", ")
}

// writeOutput writes data to path, or to stdout when path is "" or "-".
// A file is written whole or not at all: into a temporary file beside it,
// then renamed over it.
func writeOutput(c *cli.Context, path string, data []byte) error {
	if path == "" || path == "-" {
		_, err := c.App.Writer.Write(data)
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// encodeJSON writes v as indented JSON, keys of maps sorted, with <, >
// and & left as they are.
func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
