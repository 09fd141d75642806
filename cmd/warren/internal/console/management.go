package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/warrenbus/warren/internal/secret"
)

// Management reads queue rates from RabbitMQ's management HTTP API (the
// rabbitmq_management plugin), which the broker's AMQP side does not
// offer: how many redeliveries per second a work queue sees.
type Management struct {
	base     *url.URL // without user information
	user     string
	password string
	vhost    string
	client   *http.Client
}

// NewManagement returns a client of the management API at rawURL
// (http://host:15672/), for the queues of vhost. Credentials come from
// rawURL's user information, else from the AMQP URL's (the same user
// usually has both rights). Neither password is ever printed: errors show
// the URL redacted.
func NewManagement(rawURL, amqpURL string) (*Management, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--management-url %s: expected http:// or https:// and a host, like http://127.0.0.1:15672/", secret.URL(rawURL))
	}
	m := &Management{client: &http.Client{Timeout: 10 * time.Second}, vhost: "/"}
	creds := u.User
	a, err := url.Parse(amqpURL)
	if err == nil {
		if creds == nil {
			creds = a.User
		}
		if v := strings.TrimPrefix(a.Path, "/"); v != "" {
			m.vhost = v
		}
	}
	if creds != nil {
		m.user = creds.Username()
		m.password, _ = creds.Password()
	}
	u.User = nil
	u.Path = strings.TrimSuffix(u.Path, "/")
	m.base = u
	return m, nil
}

// URL returns the API's address, without credentials.
func (m *Management) URL() string { return m.base.String() }

// queueStats are the figures the management API adds to AMQP's.
type queueStats struct {
	Redelivered float64 // per second
	Delivered   float64 // per second (deliver_get: consumer deliveries and basic.get)
}

// Queues returns the rates of every queue of the vhost, by name.
func (m *Management) Queues(ctx context.Context) (map[string]queueStats, error) {
	var queues []struct {
		Name  string `json:"name"`
		Stats struct {
			Redeliver struct {
				Rate float64 `json:"rate"`
			} `json:"redeliver_details"`
			DeliverGet struct {
				Rate float64 `json:"rate"`
			} `json:"deliver_get_details"`
		} `json:"message_stats"`
	}
	if err := m.get(ctx, "/api/queues/"+url.PathEscape(m.vhost)+
		"?columns=name,message_stats.redeliver_details.rate,message_stats.deliver_get_details.rate", "a list of queues", &queues); err != nil {
		return nil, err
	}
	out := make(map[string]queueStats, len(queues))
	for _, q := range queues {
		out[q.Name] = queueStats{Redelivered: q.Stats.Redeliver.Rate, Delivered: q.Stats.DeliverGet.Rate}
	}
	return out, nil
}

// ConsumerArgs is one consumer attached to a queue, as the broker lists
// it: its queue and the arguments of its basic.consume.
type ConsumerArgs struct {
	Queue     string
	Arguments map[string]any
}

// Consumers returns every consumer attached to a queue of the vhost, with
// the arguments it consumed with: the versions a warren consumer reads
// are among them (runtime.ArgReads), whatever build of it runs.
func (m *Management) Consumers(ctx context.Context) ([]ConsumerArgs, error) {
	var consumers []struct {
		Queue struct {
			Name string `json:"name"`
		} `json:"queue"`
		Arguments map[string]any `json:"arguments"`
	}
	if err := m.get(ctx, "/api/consumers/"+url.PathEscape(m.vhost), "a list of consumers", &consumers); err != nil {
		return nil, err
	}
	out := make([]ConsumerArgs, len(consumers))
	for i, c := range consumers {
		out[i] = ConsumerArgs{Queue: c.Queue.Name, Arguments: c.Arguments}
	}
	return out, nil
}

// enablePlugin says how to turn the management API on, for an error of a
// broker that does not answer it.
const enablePlugin = "is the rabbitmq_management plugin enabled? (rabbitmq-plugins enable rabbitmq_management)"

// get reads the API's answer at path (with its query) into v, which is
// what says: "a list of queues".
func (m *Management) get(ctx context.Context, path, what string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.base.String()+path, nil)
	if err != nil {
		return err
	}
	if m.user != "" {
		req.SetBasicAuth(m.user, m.password)
	}
	resp, err := m.client.Do(req)
	if err != nil {
		return secret.Error(fmt.Errorf("management API %s does not answer, %s: %w", m.URL(), enablePlugin, err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("management API %s: %w", m.URL(), err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return fmt.Errorf("management API %s: %s for %s: %s", m.URL(), resp.Status, path, enablePlugin)
	default:
		return fmt.Errorf("management API %s: %s", m.URL(), resp.Status)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return errors.New("management API " + m.URL() + ": the answer is not " + what + ": " + err.Error())
	}
	return nil
}
