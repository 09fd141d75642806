// Package console serves warren's operations console: a web page that
// shows every consumer's dashboard figures live, with an hour of history,
// lets a person review, replay and discard poison messages, one by one or
// grouped by cause, and correct a payload (checked against its schema), and
// draws the topology and the catalogue of facts.
//
// Everything the page needs (HTML, CSS, script) is embedded in the binary;
// it loads nothing from elsewhere. The server is safe by default: every
// change needs the token (sent as the X-Warren-Token header, which a page
// of another origin cannot send) and passes cross-origin protection; a
// read-only server changes nothing; message bodies and headers travel as
// JSON strings and the page shows them as text; no password is ever sent.
package console

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/cmd/warren/internal/liveversions"
	"github.com/warrenbus/warren/runtime/outbox"
	"github.com/warrenbus/warren/runtime/saga"
	"github.com/warrenbus/warren/runtime/streamoffset"
	"github.com/warrenbus/warren/runtime/topology"
)

// Broker opens channels on a live broker connection; *runtime.Conn is one.
type Broker interface {
	OpenChannel(ctx context.Context) (*amqp.Channel, error)
}

// Config configures a [Server].
type Config struct {
	Broker   Broker            // required
	Topology topology.Topology // the schema directory's topology
	// Catalogue is the Markdown page `warren docs` renders for the same
	// schema directory; the console shows it, and draws the topology in
	// place of its Mermaid diagram.
	Catalogue []byte
	Schemas   []Schema // each fact's schema, for the schema view
	// BrokerURL is shown on the page; its password is redacted here too.
	BrokerURL string
	// Management reads rates (redeliveries) from RabbitMQ's management
	// API. Nil: the page says which figures it cannot show.
	Management *Management
	// Token authorises changes. Required unless ReadOnly.
	Token    string
	ReadOnly bool // show everything, change nothing
	// Interval between two readings of the figures. Default 5s.
	Interval time.Duration
	// History is how much of the figures' past the charts show. Default 1h.
	History time.Duration
	// Outbox, when set, is the outbox table whose pending, failed and
	// scheduled facts the overview shows beside the delay levels.
	Outbox OutboxReader
	// Sagas, when set, is the saga instances table whose instances the
	// overview shows per saga: running and completed, the oldest running
	// one's age, and how many wait on a timeout; a saga's own view lists
	// its instances with their pending timeouts.
	Sagas SagaReader
	// Validate checks an edited payload against the schema of the fact
	// with routingKey, in the version the message was written under (its
	// x-fact-version header; 0 when it has none, which a consumer reads as
	// version 1), before the console sends it: the schema the consumer
	// will check it against, as warren poison edit checks it (see
	// poison.Edit.ValidateVersion). A version it has no schema for is its
	// error. Nil: the page cannot edit.
	Validate func(routingKey string, version int, payload []byte) error
	// Versions are, per consumer, the facts with several versions it
	// reads, as the schema directory builds it; with Management, each
	// reading adds what the processes attached to its queues announce.
	// Shown under the consumer's name. Nil shows none.
	Versions []liveversions.Reads
	// StreamLag reads how far a stream consumer's stored offset is behind
	// the tail of each stream it keeps an offset on: its stream, or each
	// partition of its super stream (streamoffset.LagReader.ReadEach);
	// each reading shows it in the consumer's row. Nil shows none.
	StreamLag func(ctx context.Context, c topology.Consumer) []streamoffset.LagResult
	// PoisonLimit bounds how many messages of one poison queue a page
	// lists. Default 500.
	PoisonLimit int
	// BrokerWait bounds how long a page's reading or action waits for a
	// channel while the connection to the broker is lost and being made
	// again: then the page says the broker cannot be reached instead of
	// reading on until it comes back. Default 30s.
	BrokerWait time.Duration
	// AllowedHosts, when not empty, are the only Host headers served:
	// with a loopback listener, a page on another name that resolves to
	// 127.0.0.1 (DNS rebinding) cannot read the console.
	AllowedHosts []string
	Logger       *slog.Logger // default slog.Default()
}

// OutboxReader reads an outbox table's figures: outbox.Outbox.Status over
// the service's database.
type OutboxReader interface {
	Table() string
	Status(ctx context.Context) (outbox.Status, error)
}

// SagaReader reads the instances of sagas: saga.Admin over the service's
// database, with the outbox its sagas schedule their timeouts in so that
// the page shows when they are due.
type SagaReader interface {
	Table() string
	Summaries(ctx context.Context) ([]saga.Summary, error)
	Instances(ctx context.Context, q saga.ListQuery) (saga.InstancePage, error)
}

// Schema is one fact's schema document.
type Schema struct {
	RoutingKey  string `json:"routing_key"`
	Title       string `json:"title"`
	Version     int    `json:"version"`
	Source      string `json:"source"` // the file, relative to the schema directory
	Description string `json:"description"`
	JSON        string `json:"schema"` // pretty-printed
}

// Server is the console. Create it with [New]; run [Server.Sample] and
// serve [Server.Handler].
type Server struct {
	cfg       Config
	figures   *sampler
	catalogue []byte // rendered HTML fragment
	svg       []byte // the topology drawing
	handler   http.Handler
}

// NewToken returns a random token for authorising changes.
func NewToken() (string, error) {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("make a token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// New checks cfg and returns a Server.
func New(cfg Config) (*Server, error) {
	if cfg.Broker == nil {
		return nil, errors.New("console: Broker is required")
	}
	if !cfg.ReadOnly && len(cfg.Token) < 16 {
		return nil, errors.New("console: a token of at least 16 characters is required unless the console is read-only")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 5 * time.Second
	}
	if cfg.History <= 0 {
		cfg.History = time.Hour
	}
	if cfg.PoisonLimit <= 0 {
		cfg.PoisonLimit = 500
	}
	if cfg.BrokerWait <= 0 {
		cfg.BrokerWait = 30 * time.Second
	}
	cfg.Broker = waitingBroker{Broker: cfg.Broker, wait: cfg.BrokerWait}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	html, err := renderCatalogue(cfg.Catalogue)
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	s := &Server{
		cfg:       cfg,
		figures:   newSampler(cfg),
		catalogue: html,
		svg:       drawTopology(cfg.Topology),
	}
	s.handler = s.routes()
	return s, nil
}

// Handler serves the page and its API.
func (s *Server) Handler() http.Handler { return s.handler }

// Sample reads the figures now and then every Interval until ctx ends.
func (s *Server) Sample(ctx context.Context) {
	s.figures.run(ctx)
}

// waitingBroker bounds how long opening a channel waits for the broker.
// A lost connection makes OpenChannel wait for the reconnect as long as
// its context allows, and a page's request has no deadline of its own.
type waitingBroker struct {
	Broker
	wait time.Duration
}

func (b waitingBroker) OpenChannel(ctx context.Context) (*amqp.Channel, error) {
	wctx, cancel := context.WithTimeout(ctx, b.wait)
	defer cancel()
	ch, err := b.Broker.OpenChannel(wctx)
	if err != nil && ctx.Err() == nil && wctx.Err() != nil {
		return nil, fmt.Errorf("the broker cannot be reached: no connection to it for %s (warren console keeps trying): %w", b.wait, err)
	}
	return ch, err
}
